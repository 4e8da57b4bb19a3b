import pytest
from solution import from_roman, to_roman


@pytest.mark.parametrize("text", ["IIII", "VV", "IC", "XM", "IIV", "VX", "LL"])
def test_non_canonical_refused(text):
    with pytest.raises(ValueError):
        from_roman(text)


def test_round_trip():
    for n in range(1, 4000):
        assert from_roman(to_roman(n)) == n
