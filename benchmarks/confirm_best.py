"""How often a single measurement's best program is not the confirmed best.

A loop keeps the program with the best score. Where scores are noisy (a program that passes
some tests by chance), one measurement's best is often just the luckiest. This benchmark
builds a task of ``--tests`` independent tests and a small population: steady programs that
pass a fixed number of them (8 and 7 of 10), and lucky ones that pass each test by chance
(75% and 70%: on average less than the best steady one, but in one measurement often more).
For each of ``--trials`` trials every program is scored once (the loop's single
measurement), and every program is confirmed (``Evaluator.confirm(program, k)``: k more
measurements, credited at the lower end of the pass rate's 95% interval). Reported: how often
the single-measurement best differs from the confirmed best, the intervals' widths, and the
time a confirmation costs against one score.

Usage::

    .venv/bin/python -m benchmarks.confirm_best [--trials 10] [--k 5] [--tests 10]

Sandboxed runs on this machine; the counts are the result, the times for information.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from pytest_scorewright.evaluator import Evaluator

#: name -> the source of ``passes(i)``: steady ones pass tests below a bound, lucky ones pass
#: each with a probability.
POPULATION = {
    "steady_8": "def passes(i):\n    return i < 8\n",
    "steady_7": "def passes(i):\n    return i < 7\n",
    "lucky_75": "import random\n\ndef passes(i):\n    return random.random() < 0.75\n",
    "lucky_70": "import random\n\ndef passes(i):\n    return random.random() < 0.70\n",
}


def build(root: Path, tests: int) -> None:
    (root / "tests").mkdir()
    lines = ["import solution", ""]
    for i in range(tests):
        lines += [f"def test_{i}():", f"    assert solution.passes({i})", "", ""]
    (root / "tests" / "test_chance.py").write_text("\n".join(lines), encoding="utf-8")
    (root / "reference.py").write_text("def passes(i):\n    return True\n", encoding="utf-8")
    for name, source in POPULATION.items():
        (root / f"{name}.py").write_text(source, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--tests", type=int, default=10)
    args = parser.parse_args(argv)
    changed = 0
    widths: dict[str, list[float]] = {name: [] for name in POPULATION}
    single_s: list[float] = []
    confirm_s: list[float] = []
    picks: dict[str, int] = {}
    confirmed_picks: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="sw-confirm-") as tmp:
        root = Path(tmp)
        build(root, args.tests)
        with Evaluator(root / "tests", reference=root / "reference.py", dedupe=False) as ev:
            ev.prepare()
            for _ in range(args.trials):
                single, confirmed = {}, {}
                for name in POPULATION:
                    started = time.perf_counter()
                    single[name] = ev.score(root / f"{name}.py").signal("pass_rate") or 0.0
                    single_s.append(time.perf_counter() - started)
                    started = time.perf_counter()
                    result = ev.confirm(root / f"{name}.py", args.k)
                    confirm_s.append(time.perf_counter() - started)
                    confirmed[name] = result.signal("pass_rate") or 0.0
                    rate = result.extra["repeats"]["signals"]["pass_rate"]
                    widths[name].append(rate["high"] - rate["low"])
                # Ties go to the first in POPULATION order, in both rankings.
                best = max(POPULATION, key=lambda n: single[n])
                kept = max(POPULATION, key=lambda n: confirmed[n])
                picks[best] = picks.get(best, 0) + 1
                confirmed_picks[kept] = confirmed_picks.get(kept, 0) + 1
                changed += best != kept
    print(f"{args.trials} trials, {len(POPULATION)} programs, {args.tests} tests, k={args.k}")
    print(f"single measurement's best: {dict(sorted(picks.items()))}")
    print(f"confirmed best:            {dict(sorted(confirmed_picks.items()))}")
    print(f"confirmation changed the best in {changed}/{args.trials} trials")
    for name, found in widths.items():
        print(f"  {name:10s} pass-rate interval width, median {statistics.median(found):.3f}")
    print(
        f"time: one score {statistics.median(single_s):.3f}s, one confirmation (k={args.k}) "
        f"{statistics.median(confirm_s):.3f}s (medians)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
