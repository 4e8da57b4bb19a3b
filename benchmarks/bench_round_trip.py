"""What the benchmark fixture reads for calls of known length, apart and in process.

A candidate whose ``work(seconds)`` busy-waits for exactly that long is benchmarked by the
``benchmark`` fixture through the evaluator, for each length in ``--lengths`` (microseconds),
with the candidate in a process of its own (each call a round trip, subtracted) and in the
test process (nothing subtracted), ``--runs`` times each. Reported per length and isolation:
the median of the fixture's median call times, its spread over the runs, and the round trip
subtracted per call. What it shows: down to which call length the figure apart tracks the
true one, and how far it reads long below that (docs/objectives.md).

Usage::

    .venv/bin/python -m benchmarks.bench_round_trip [--runs 5] [--lengths 10,100,1000,10000]

A timing benchmark: run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from pytest_scorewright.evaluator import Evaluator

TESTS = """
import pytest
import solution

LENGTHS = {lengths!r}


@pytest.mark.benchmark(max_time=0.3)
@pytest.mark.parametrize("micros", LENGTHS)
def test_work(benchmark, micros):
    benchmark(solution.work, micros * 1e-6)
"""

CANDIDATE = """
import time


def work(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass
"""


def measure(lengths: list[int], runs: int, isolation: str) -> dict[int, list[tuple[float, float]]]:
    """Per length: (median call time, round trip subtracted) of each run, in seconds."""
    found: dict[int, list[tuple[float, float]]] = {n: [] for n in lengths}
    with tempfile.TemporaryDirectory(prefix="scorewright-bench-") as tmp:
        root = Path(tmp)
        (root / "tests").mkdir()
        (root / "tests" / "test_work.py").write_text(TESTS.format(lengths=lengths))
        (root / "solution.py").write_text(CANDIDATE)
        with Evaluator(
            root / "tests", reference=root / "solution.py", isolation=isolation, dedupe=False
        ) as ev:
            for _ in range(runs):
                result = ev.score(root / "solution.py")
                for record in result.tests:
                    micros = int(record.nodeid.rsplit("[", 1)[1].rstrip("]"))
                    if record.benchmark is not None:
                        found[micros].append(
                            (record.benchmark.median_s, record.benchmark.overhead_s)
                        )
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--lengths", default="10,100,1000,10000", help="call lengths in us")
    args = parser.parse_args()
    lengths = [int(n) for n in args.lengths.split(",")]
    print(
        f"{'call':>9}  {'isolation':<10}  {'reads (median)':>14}  {'runs min-max':>17}  "
        f"{'subtracted':>10}"
    )
    for isolation in ("process", "in-process"):
        for micros, figures in measure(lengths, args.runs, isolation).items():
            medians = [m * 1e6 for m, _ in figures]
            subtracted = statistics.median(o * 1e6 for _, o in figures) if figures else 0.0
            if not medians:
                print(f"{micros:>7}us  {isolation:<10}  (no figure)")
                continue
            spread = f"{min(medians):.1f}-{max(medians):.1f}us"
            print(
                f"{micros:>7}us  {isolation:<10}  {statistics.median(medians):>12.1f}us  "
                f"{spread:>17}  {subtracted:>8.1f}us"
            )


if __name__ == "__main__":
    main()
