"""What isolation by process costs: a call's round trip, and a candidate's whole score.

Run from the project root: ``python -m benchmarks.isolation_cost [--calls N] [--candidates N]``.

1. Round trip: a test in the trusted suite times ``--calls`` calls of the candidate's
   ``add(i, 1)`` (and of a method, and one call with a 100,000-item list) with
   ``time.perf_counter`` in the test process, and prints the figures to its output, which the
   result keeps; run with the candidate apart (``isolation="process"``; its run on one CPU,
   the default, and spread over the CPUs, ``Limits(one_cpu=False)``) and in process.
2. Per candidate: ``score_many`` of ``--candidates`` copies of the numbers corpus task's
   honest candidates, ``-j 2``, under each isolation, interleaved, best of ``--rounds``.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

from pytest_scorewright.evaluator import Evaluator
from pytest_scorewright.limits import Limits

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "corpus" / "numbers"

REFERENCE = """
def add(a, b):
    return a + b

def total(xs):
    return sum(xs)

class Box:
    def __init__(self, v):
        self.v = v
    def get(self):
        return self.v
"""

TIMING_TEST = """
import time
from solution import add, total, Box

def test_round_trips():
    n = {calls}
    add(0, 1)
    started = time.perf_counter()
    for i in range(n):
        assert add(i, 1) == i + 1
    call = (time.perf_counter() - started) / n
    box = Box(3)
    started = time.perf_counter()
    for _ in range(n):
        box.get()
    method = (time.perf_counter() - started) / n
    items = list(range(100_000))
    started = time.perf_counter()
    assert total(items) == sum(items)
    big = time.perf_counter() - started
    print(f"ROUNDTRIP {{call * 1e6:.1f}} {{method * 1e6:.1f}} {{big * 1e3:.2f}}")
"""


#: What is compared: a label, the isolation, and ``Limits.one_cpu`` (a run apart on one CPU).
VARIANTS = {
    "process": ("process", True),
    "process, spread": ("process", False),
    "in-process": ("in-process", True),
}


def round_trips(calls: int, variant: str) -> tuple[float, float, float]:
    isolation, one_cpu = VARIANTS[variant]
    with tempfile.TemporaryDirectory(prefix="sw-cost-") as tmp:
        root = Path(tmp)
        (root / "tests").mkdir()
        (root / "tests" / "test_rt.py").write_text(TIMING_TEST.format(calls=calls))
        (root / "solution.py").write_text(REFERENCE)
        with Evaluator(
            root / "tests",
            reference=root / "solution.py",
            isolation=isolation,
            limits=Limits(one_cpu=one_cpu),
            dedupe=False,  # the same candidates are timed again
        ) as ev:
            result = ev.score(root / "solution.py")
    found = re.search(r"ROUNDTRIP ([\d.]+) ([\d.]+) ([\d.]+)", str(result.extra.get("output")))
    if found is None or result.signal("pass_rate") != 1.0:
        raise SystemExit(f"the timing run failed: {result.error}")
    call, method, big = (float(g) for g in found.groups())
    return call, method, big


def per_candidate(candidates: int, variant: str) -> float:
    isolation, one_cpu = VARIANTS[variant]
    honest = sorted(p for p in (CORPUS / "candidates").glob("honest_*.py") if "slow" not in p.name)
    batch = [honest[i % len(honest)] for i in range(candidates)]
    with Evaluator(
        CORPUS / "tests",
        heldout=CORPUS / "heldout",
        reference=CORPUS / "reference",
        isolation=isolation,
        limits=Limits(one_cpu=one_cpu),
        dedupe=False,  # the same candidates are timed again
    ) as ev:
        started = time.perf_counter()
        results = [r for _, r in ev.score_many(batch, workers=2)]
        elapsed = time.perf_counter() - started
    if not all(r.ok for r in results):
        raise SystemExit("a candidate was not scored")
    return elapsed / candidates


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--candidates", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}; {args.calls} calls; {args.candidates} candidates")
    for variant in VARIANTS:
        call, method, big = round_trips(args.calls, variant)
        print(
            f"{variant:15}  call {call:7.1f} us   method {method:7.1f} us   "
            f"100k-item list {big:7.2f} ms"
        )
    times: dict[str, list[float]] = {variant: [] for variant in VARIANTS}
    for _ in range(args.rounds):
        for variant in times:  # interleaved, so drift in the machine's speed touches all
            times[variant].append(per_candidate(args.candidates, variant))
    for variant, found in times.items():
        print(
            f"{variant:15}  per candidate (score_many -j 2): best {min(found) * 1e3:.1f} ms, "
            f"median {statistics.median(found) * 1e3:.1f} ms"
        )
    ratio = min(times["process"]) / min(times["in-process"])
    print(f"process / in-process per candidate: {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
