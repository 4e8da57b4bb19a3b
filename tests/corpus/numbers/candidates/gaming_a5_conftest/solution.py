"""expect: candidate_config|source_pytest_hook -- a conftest.py that rewrites failures into passes."""


def is_prime(n):
    return True


def gcd(a, b):
    return 0


def fib(n):
    return 0
