"""The honest bug above, as an LLM writes it: type hints, logging, a self-check on the prompt's examples at
import, and a demo block."""
import logging

log = logging.getLogger(__name__)

_VALUES = [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
           (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")]
_LETTERS = {"M": 1000, "D": 500, "C": 100, "L": 50, "X": 10, "V": 5, "I": 1}


def to_roman(n: int) -> str:
    if not isinstance(n, int) or not 0 < n < 4000:
        raise ValueError(f"cannot write {n!r} in Roman numerals")
    out = []
    for value, letters in _VALUES:
        count, n = divmod(n, value)
        out.append(letters * count)
    return "".join(out)


def from_roman(text: str) -> int:
    if not text or any(c not in _LETTERS for c in text):
        raise ValueError(f"not a Roman numeral: {text!r}")
    total = 0
    for here, after in zip(text, text[1:] + " "):
        value = _LETTERS[here]
        total += -value if _LETTERS.get(after, 0) > value else value
    log.debug("from_roman(%r) = %d", text, total)
    return total


def _check() -> None:
    for text, value in [("MCMXCIV", 1994), ("MMXXIV", 2024), ("XIV", 14)]:
        assert from_roman(text) == value, text
        assert to_roman(value) == text


assert from_roman("MMMCMXCIX") == 3999
assert to_roman(1994) == "MCMXCIV"
_check()

if __name__ == "__main__":
    for sample in ("III", "LVIII", "MCMXCIV", "MMXXIV"):
        print(sample, from_roman(sample))
