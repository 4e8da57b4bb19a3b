"""Throughput of score_many against a fresh `python -m pytest` subprocess per candidate.

Run from the project root: ``python -m benchmarks.throughput [--candidates N] [--rounds R]``.

The suite is tests/corpus/numbers (12 visible + 11 held-out tests, a ~25-test suite); the
candidates are its honest ones, cycled to N. Three evaluators score the same candidates,
side by side in one run, for R rounds (medians reported):

- fresh-serial: the evaluator most loops hand-write: copy the candidate next to the tests,
  `python -m pytest -q -p no:cacheprovider`, one after another (no sandbox, no integrity);
- fresh-2: the same with two subprocesses at a time;
- scorewright -j 2: Evaluator.score_many(workers=2), with the sandbox and integrity layer on.

It also reports the tests' own run time (the reference's tests, setup to teardown, by the
parent's clock) to compare the per-candidate cost with.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from pytest_scorewright.evaluator import Evaluator

TASK = Path(__file__).resolve().parent.parent / "tests" / "corpus" / "numbers"


def fresh_one(candidate: Path) -> int:
    with tempfile.TemporaryDirectory(prefix="fresh-") as tmp:
        shutil.copytree(TASK / "tests", Path(tmp) / "tests")
        shutil.copytree(TASK / "heldout", Path(tmp) / "heldout")
        shutil.copyfile(candidate, Path(tmp) / "solution.py")
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests", "heldout"],
            cwd=tmp,
            capture_output=True,
            check=False,
            env={**os.environ, "PYTHONPATH": tmp},
        )
        return done.returncode


def fresh(candidates: Sequence[Path], workers: int) -> float:
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(fresh_one, candidates))
    return time.perf_counter() - started


def ours(evaluator: Evaluator, candidates: Sequence[Path], workers: int) -> float:
    started = time.perf_counter()
    results = list(evaluator.score_many(candidates, workers=workers))
    elapsed = time.perf_counter() - started
    if len(results) != len(candidates) or any(r.signal("tests_total") != 23 for _, r in results):
        raise SystemExit("a result is missing or incomplete")
    return elapsed


def tests_own_time(evaluator: Evaluator) -> float:
    """The suite's own run time: the reference's tests, setup to teardown, as the parent
    clocked them (visible and held-out runs)."""
    result = evaluator.score(TASK / "reference" / "solution.py")
    return sum(t.duration_s or 0.0 for t in result.tests)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    honest = sorted(p for p in (TASK / "candidates").glob("honest_*.py") if "slow" not in p.name)
    candidates = [honest[i % len(honest)] for i in range(args.candidates)]
    print(
        f"machine: python {platform.python_version()}, {platform.platform()}, "
        f"{os.cpu_count()} cpus; {len(candidates)} candidates, {args.rounds} rounds"
    )
    timings: dict[str, list[float]] = {"fresh-serial": [], "fresh-2": [], "scorewright -j 2": []}
    with Evaluator(TASK / "tests", heldout=TASK / "heldout", reference=TASK / "reference") as ev:
        ours(ev, candidates[:2], 2)  # warm-up: the warm parent's first forks
        for _ in range(args.rounds):
            timings["fresh-serial"].append(fresh(candidates, 1))
            timings["fresh-2"].append(fresh(candidates, 2))
            timings["scorewright -j 2"].append(ours(ev, candidates, 2))
        own = statistics.median(tests_own_time(ev) for _ in range(5))
    base = statistics.median(timings["fresh-serial"])
    print(
        f"\n{'evaluator':18} {'median s':>9} {'per cand. ms':>13} {'cand./s':>8} {'vs serial':>10}"
    )
    for name, values in timings.items():
        median = statistics.median(values)
        per = 1000 * median / len(candidates)
        print(
            f"{name:18} {median:9.2f} {per:13.1f} {len(candidates) / median:8.2f} "
            f"{base / median:9.2f}x"
        )
    ours_per = statistics.median(timings["scorewright -j 2"]) / len(candidates)
    print(
        f"\ntests' own run time: {1000 * own:.1f} ms; scorewright per candidate "
        f"(-j 2, wall/N): {1000 * ours_per:.1f} ms = {ours_per / own:.2f}x of it"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
