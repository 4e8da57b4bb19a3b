"""Roman numerals: to_roman and a strict from_roman (the reference)."""
_VALUES = [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
           (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")]


def to_roman(n):
    if not 0 < n < 4000:
        raise ValueError(n)
    out = []
    for value, letters in _VALUES:
        while n >= value:
            out.append(letters)
            n -= value
    return "".join(out)


def from_roman(text):
    table = {"M": 1000, "D": 500, "C": 100, "L": 50, "X": 10, "V": 5, "I": 1}
    if not text or any(c not in table for c in text):
        raise ValueError(text)
    total = 0
    for i, c in enumerate(text):
        v = table[c]
        if i + 1 < len(text) and table[text[i + 1]] > v:
            total -= v
        else:
            total += v
    if to_roman(total) != text:
        raise ValueError(text)
    return total
