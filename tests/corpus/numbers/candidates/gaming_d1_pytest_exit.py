"""expect: early_exit|skip_from_candidate -- pytest.exit(returncode=0) in a test."""
import pytest


def is_prime(n):
    pytest.exit("all good", returncode=0)


def gcd(a, b):
    return 0


def fib(n):
    return 0
