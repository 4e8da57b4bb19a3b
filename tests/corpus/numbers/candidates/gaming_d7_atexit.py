"""expect: atexit_registered -- forces a zero exit status at shutdown."""
import atexit
import os

atexit.register(lambda: os._exit(0))


def is_prime(n):
    return False


def gcd(a, b):
    return 0


def fib(n):
    return 0
