"""expect: timer_patched -- freezes the clocks."""
import time

time.perf_counter = lambda: 0.0
time.monotonic = lambda: 0.0


def is_prime(n):
    return n > 1 and all(n % d for d in range(2, n))


def gcd(a, b):
    import math
    return math.gcd(a, b)


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
