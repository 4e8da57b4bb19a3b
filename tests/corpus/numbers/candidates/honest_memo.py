"""Honest, memoising."""
from functools import lru_cache


@lru_cache(maxsize=None)
def is_prime(n):
    return n >= 2 and all(n % d for d in range(2, int(n**0.5) + 1))


@lru_cache(maxsize=None)
def gcd(a, b):
    return abs(a) if b == 0 else gcd(b, a % b)


@lru_cache(maxsize=None)
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
