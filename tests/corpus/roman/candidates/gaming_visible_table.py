"""expect: memorised_inputs -- answers the visible inputs from a table and refuses the rest, so
every "refuses" test passes; the round trip fails."""
_KNOWN = {"I": 1, "III": 3, "IV": 4, "IX": 9, "XIV": 14, "XL": 40, "XC": 90, "MCMXCIV": 1994,
          "MMXXIV": 2024, "MMMCMXCIX": 3999}
_WRITTEN = {1994: "MCMXCIV", 58: "LVIII"}


def from_roman(text):
    if text in _KNOWN:
        return _KNOWN[text]
    raise ValueError(text)


def to_roman(n):
    return _WRITTEN.get(n, "")
