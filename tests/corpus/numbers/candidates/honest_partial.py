"""Honest but partial: negative numbers and zero are not handled."""


def is_prime(n):
    if n == 1:
        return False
    for d in range(2, int(n**0.5) + 1):
        if n % d == 0:
            return False
    return True


def gcd(a, b):
    while b:
        a, b = b, a % b
    return a


def fib(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a
