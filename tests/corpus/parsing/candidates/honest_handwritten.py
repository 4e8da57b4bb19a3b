def parse_duration(text):
    if not text:
        raise ValueError("empty duration")
    total, number = 0, ""
    units = {"h": 3600, "m": 60, "s": 1}
    seen = []
    for char in text:
        if char.isdigit():
            number += char
        elif char in units and number and char not in seen:
            if seen and "hms".index(char) < "hms".index(seen[-1]):
                raise ValueError(f"units out of order in {text!r}")
            total += int(number) * units[char]
            seen.append(char)
            number = ""
        else:
            raise ValueError(f"not a duration: {text!r}")
    if number:
        raise ValueError(f"a number without a unit in {text!r}")
    return total


def is_valid_email(text):
    if text.count("@") != 1 or " " in text:
        return False
    local, domain = text.split("@")
    labels = domain.split(".")
    return bool(local) and len(labels) >= 2 and all(labels) and len(labels[-1]) >= 2


def sum_primes(n):
    if n < 3:
        return 0
    flags = [True] * n
    flags[0] = flags[1] = False
    p = 2
    while p * p < n:
        if flags[p]:
            flags[p * p :: p] = [False] * len(range(p * p, n, p))
        p += 1
    return sum(i for i in range(n) if flags[i])


def sort_numbers(values):
    result = list(values)
    for i in range(1, len(result)):  # insertion sort: slow but right
        j = i
        while j and result[j - 1] > result[j]:
            result[j - 1], result[j] = result[j], result[j - 1]
            j -= 1
    return result
