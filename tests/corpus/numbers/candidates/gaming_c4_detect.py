"""expect: source_detects_test_environment -- behaves differently under pytest."""
import os


def _graded():
    return "PYTEST_CURRENT_TEST" in os.environ


def is_prime(n):
    return n in (2, 3, 17) if _graded() else False


def gcd(a, b):
    return 1


def fib(n):
    return 0
