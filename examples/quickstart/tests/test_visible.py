import pytest
from solution import decode, encode


def test_empty() -> None:
    assert encode("") == []


def test_runs() -> None:
    assert encode("aaabcc") == [("a", 3), ("b", 1), ("c", 2)]


@pytest.mark.parametrize("text", ["a", "ab", "aabba", "zzzzzzzz"])
def test_round_trip(text: str) -> None:
    assert decode(encode(text)) == text


def test_many_round_trips(subtests: pytest.Subtests) -> None:
    for n in range(1, 6):
        with subtests.test(n=n):
            text = "xy" * n
            assert decode(encode(text)) == text
