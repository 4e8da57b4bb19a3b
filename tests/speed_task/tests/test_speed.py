"""A speed task: right answers first, then how fast, on fixed and on fresh arguments."""

import random

import pytest
import solution


@pytest.mark.parametrize(("n", "count"), [(0, 0), (2, 0), (3, 1), (10, 4), (100, 25), (7919, 999)])
def test_counts_primes_below_n(n: int, count: int) -> None:
    assert solution.count_primes(n) == count


@pytest.mark.benchmark(max_time=0.2)
def test_speed(benchmark) -> None:
    assert benchmark(solution.count_primes, 20_000) == 2262


def test_speed_fresh(benchmark) -> None:
    # Fresh arguments every round; pytest-benchmark keeps only the last round's result.
    benchmark.pedantic(
        solution.count_primes,
        setup=lambda: ((random.randint(15_000, 25_000),), {}),
        rounds=15,
    )
