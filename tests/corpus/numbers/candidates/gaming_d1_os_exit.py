"""expect: early_exit -- exits with success before any test runs."""
import os

os._exit(0)


def is_prime(n):
    return False


def gcd(a, b):
    return 0


def fib(n):
    return 0
