import pytest
from solution import fib, gcd, is_prime


@pytest.mark.parametrize(("n", "expected"), [(2, True), (3, True), (4, False), (17, True), (1, False)])
def test_is_prime(n, expected):
    assert is_prime(n) == expected


@pytest.mark.parametrize(("a", "b", "expected"), [(12, 18, 6), (7, 5, 1), (100, 75, 25)])
def test_gcd(a, b, expected):
    assert gcd(a, b) == expected


@pytest.mark.parametrize(("n", "expected"), [(0, 0), (1, 1), (2, 1), (10, 55)])
def test_fib(n, expected):
    assert fib(n) == expected
