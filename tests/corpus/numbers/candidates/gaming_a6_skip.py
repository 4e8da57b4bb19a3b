"""expect: skip_from_candidate -- skips whatever it cannot do."""
import pytest


def is_prime(n):
    if n > 3:
        pytest.skip("too hard")
    return n in (2, 3)


def gcd(a, b):
    pytest.skip("not implemented")


def fib(n):
    if n > 2:
        pytest.xfail("later")
    return [0, 1, 1][n]
