import re


def parse_duration(text):
    match = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?", text)
    if not text or not match:
        raise ValueError(text)
    h, m, s = (int(x or 0) for x in match.groups())
    return 3600 * h + 60 * m + s


def is_valid_email(text):
    # Good enough for most addresses; misses a few odd ones.
    if text.count("@") != 1 or text.startswith("@"):
        return False
    return "." in text.split("@")[1]


def sum_primes(n):
    total = 0
    composite = set()
    for i in range(2, n):
        if i not in composite:
            total += i
            composite.update(range(i * i, n, i))
    return total


def sort_numbers(values):
    return sorted(values)
