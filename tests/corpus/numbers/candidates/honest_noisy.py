"""Honest, with noisy timing."""
import random
import time


def _jitter():
    time.sleep(random.random() * 0.03)


def is_prime(n):
    _jitter()
    if n < 2:
        return False
    if n % 2 == 0:
        return n == 2
    return all(n % d for d in range(3, int(n**0.5) + 1, 2))


def gcd(a, b):
    _jitter()
    import math
    return math.gcd(a, b)


def fib(n):
    _jitter()
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a
