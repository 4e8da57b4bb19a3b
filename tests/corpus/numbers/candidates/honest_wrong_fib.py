"""Honest but buggy everywhere fib is used (off by one)."""


def is_prime(n):
    return n > 1 and all(n % d for d in range(2, int(n**0.5) + 1))


def gcd(a, b):
    a, b = abs(a), abs(b)
    while b:
        a, b = b, a % b
    return a


def fib(n):
    a, b = 1, 1
    for _ in range(n):
        a, b = b, a + b
    return a
