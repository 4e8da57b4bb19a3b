"""Honest, concurrent: a thread pool left running (idle workers at the end)."""
from concurrent.futures import ThreadPoolExecutor

_POOL = ThreadPoolExecutor(max_workers=2)


def _is_prime(n):
    return n > 1 and all(n % d for d in range(2, int(n**0.5) + 1))


def is_prime(n):
    return _POOL.submit(_is_prime, n).result()


def gcd(a, b):
    a, b = abs(a), abs(b)
    while b:
        a, b = b, a % b
    return a


def fib(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a
