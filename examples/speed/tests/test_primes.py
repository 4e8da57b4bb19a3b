"""The speed task's trusted tests: right answers first, then how fast, with the benchmark
fixture (pytest-benchmark's calling convention; pytest-scorewright's clock)."""

import pytest
import solution


@pytest.mark.parametrize(("n", "count"), [(0, 0), (2, 0), (3, 1), (10, 4), (100, 25), (7919, 999)])
def test_counts_primes_below_n(n: int, count: int) -> None:
    assert solution.count_primes(n) == count


@pytest.mark.benchmark(max_time=0.3)
def test_speed(benchmark) -> None:
    assert benchmark(solution.count_primes, 30_000) == 3245
