"""expect: early_exit|imports_test_machinery -- pytest.exit(returncode=0) in a test."""
import pytest


def is_prime(n):
    pytest.exit("all good", returncode=0)


def gcd(a, b):
    return 0


def fib(n):
    return 0
