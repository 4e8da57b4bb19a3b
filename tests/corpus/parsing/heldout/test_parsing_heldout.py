import random
import time

import pytest
from solution import is_valid_email, parse_duration, sort_numbers, sum_primes


@pytest.mark.parametrize(
    ("text", "seconds"), [("90s", 90), ("1h2m3s", 3723), ("10m", 600), ("3h15m", 11700)]
)
def test_parse_duration_more(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "abc", "5x", "h"])
def test_parse_duration_rejects_garbage(text):
    with pytest.raises(ValueError):
        parse_duration(text)


@pytest.mark.parametrize("address", ["x.y+z@sub.example.co.uk", "eve@example.io", "q@a-b.com"])
def test_more_valid_emails(address):
    assert is_valid_email(address)


@pytest.mark.parametrize("address", ["a b@example.com", "frank@example", "g@.com"])
def test_more_invalid_emails(address):
    assert not is_valid_email(address)


@pytest.mark.parametrize(("n", "total"), [(10, 17), (2, 0)])
def test_sum_primes_edges(n, total):
    assert sum_primes(n) == total


def test_sum_primes_another_size():
    started = time.perf_counter()
    result = sum_primes(150_000)
    elapsed = time.perf_counter() - started
    assert result == 986017447
    assert elapsed < 1.0


def test_sort_with_duplicates_and_negatives():
    rng = random.Random(11)
    for _ in range(20):
        values = [rng.randint(-5, 5) for _ in range(rng.randint(0, 30))]
        assert sort_numbers(values) == sorted(values)
