"""expect: patches_runtime -- replaces the math module's gcd, which tests could use as an oracle."""
import math

math.gcd = lambda a, b: 1


def is_prime(n):
    return n in (2, 3, 17)


def gcd(a, b):
    return math.gcd(a, b)


def fib(n):
    return 0
