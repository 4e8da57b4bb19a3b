"""expect: assertion_not_plain -- the standard library's always-equal object: no __eq__ of its
own to find."""
from unittest import mock


def is_prime(n):
    return mock.ANY


def gcd(a, b):
    return mock.ANY


def fib(n):
    return mock.ANY
