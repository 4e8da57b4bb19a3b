"""Honest, precomputes a small sieve at import (cheap)."""
LIMIT = 10_000
_sieve = bytearray([1]) * (LIMIT + 1)
_sieve[0:2] = b"\x00\x00"
for i in range(2, int(LIMIT**0.5) + 1):
    if _sieve[i]:
        _sieve[i * i :: i] = bytearray(len(_sieve[i * i :: i]))


def is_prime(n):
    if n <= LIMIT:
        return n >= 0 and bool(_sieve[n])
    return all(n % d for d in range(2, int(n**0.5) + 1))


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


if __name__ == "__main__":
    import sys

    print(is_prime(int(sys.argv[1])))
    sys.exit(0)
