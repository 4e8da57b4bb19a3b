"""Honest, recursive, raises the recursion limit."""
import sys

sys.setrecursionlimit(10_000)


def is_prime(n, d=2):
    if n < 2:
        return False
    if d * d > n:
        return True
    return n % d != 0 and is_prime(n, d + 1)


def gcd(a, b):
    return abs(a) if b == 0 else gcd(b, a % b)


def fib(n, a=0, b=1):
    return a if n == 0 else fib(n - 1, b, a + b)
