import pytest
from solution import fib, gcd, is_prime


@pytest.mark.parametrize(("n", "expected"), [(7919, True), (7917, False), (0, False), (-7, False), (97, True)])
def test_is_prime_more(n, expected):
    assert is_prime(n) == expected


@pytest.mark.parametrize(("a", "b", "expected"), [(0, 5, 5), (-4, 6, 2), (270, 192, 6)])
def test_gcd_more(a, b, expected):
    assert gcd(a, b) == expected


@pytest.mark.parametrize(("n", "expected"), [(20, 6765), (30, 832040), (3, 2)])
def test_fib_more(n, expected):
    assert fib(n) == expected
