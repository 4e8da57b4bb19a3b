"""Right, and slow to import (a table made at import, 2.5 s of work): no speed to buy here, so its
tests count (import_time_work is a hint, and voids speed where a test is timed)."""
import time

_deadline = time.monotonic() + 2.5
_FIB = [0, 1]
while time.monotonic() < _deadline:
    _FIB = [0, 1]
    for _ in range(2000):
        _FIB.append(_FIB[-1] + _FIB[-2])


def is_prime(n):
    return n > 1 and all(n % d for d in range(2, int(n**0.5) + 1))


def gcd(a, b):
    a, b = abs(a), abs(b)
    while b:
        a, b = b, a % b
    return a


def fib(n):
    return _FIB[n]
