import random
import time

import pytest
from solution import is_valid_email, parse_duration, sort_numbers, sum_primes


def reference_sort(values):
    return sorted(values)


@pytest.mark.parametrize(("text", "seconds"), [("1h30m", 5400), ("45s", 45), ("2h", 7200)])
def test_parse_duration(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("address", ["alice@example.com", "bob.smith@mail.example.org"])
def test_valid_emails(address):
    assert is_valid_email(address)


@pytest.mark.parametrize("address", ["not-an-email", "@example.com", "carol@", "dave@@example.com"])
def test_invalid_emails(address):
    assert not is_valid_email(address)


def test_sum_primes_small():
    assert sum_primes(30) == 129


def test_sum_primes_benchmark():
    started = time.perf_counter()
    result = sum_primes(200_000)
    elapsed = time.perf_counter() - started
    assert result == 1709600813
    assert elapsed < 1.0


def test_sort_matches_the_reference():
    rng = random.Random(7)
    for _ in range(20):
        values = [rng.randint(-1000, 1000) for _ in range(rng.randint(0, 50))]
        assert sort_numbers(values) == reference_sort(values)
