"""Slow, and replaces the timer to look fast: tamper evidence, no speed credit."""

import time

time.perf_counter = lambda: 0.0


def count_primes(n: int) -> int:
    count = 0
    for k in range(2, n):
        if all(k % d for d in range(2, int(k**0.5) + 1)):
            count += 1
    return count
