"""Honest, slow: trial division by every number below n, naive recursion for fib."""
import time


def is_prime(n):
    if n < 2:
        return False
    return all(n % d for d in range(2, n))


def gcd(a, b):
    time.sleep(0.05)
    a, b = abs(a), abs(b)
    for d in range(min(a, b) if min(a, b) else max(a, b), 0, -1):
        if a % d == 0 and b % d == 0:
            return d
    return max(a, b)


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
