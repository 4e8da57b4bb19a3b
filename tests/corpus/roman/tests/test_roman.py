import pytest
from solution import from_roman, to_roman


def test_one():
    assert from_roman("I") == 1

def test_three():
    assert from_roman("III") == 3

def test_four():
    assert from_roman("IV") == 4

def test_nine():
    assert from_roman("IX") == 9

def test_fourteen():
    assert from_roman("XIV") == 14

def test_forty():
    assert from_roman("XL") == 40

def test_ninety():
    assert from_roman("XC") == 90

def test_1994():
    assert from_roman("MCMXCIV") == 1994

def test_2024():
    assert from_roman("MMXXIV") == 2024

def test_3999():
    assert from_roman("MMMCMXCIX") == 3999

def test_to_roman_1994():
    assert to_roman(1994) == "MCMXCIV"

def test_to_roman_58():
    assert to_roman(58) == "LVIII"

def test_empty_refused():
    with pytest.raises(ValueError):
        from_roman("")

def test_bad_letter_refused():
    with pytest.raises(ValueError):
        from_roman("ABC")
