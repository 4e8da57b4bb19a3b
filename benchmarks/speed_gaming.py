"""Speed you can trust: every candidate of tests/speed_task scored with default settings,
and the honest ones' speedup beside what plain pytest-benchmark measures for the same code.

    python -m benchmarks.speed_gaming [--rounds N]

Prints, per candidate, the median over N scorings of its pass rate, its speedup (or
"rejected"), and its integrity codes; then, for each honest candidate, each benchmark test's
ratio to the reference in pytest-benchmark's own fixture (its entry point, medians, no
proxy, no sandbox; the median over N runs) combined as the ``speedup`` signal combines
them, beside ours (the median over the N scorings).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from pytest_scorewright.evaluator import Evaluator

TASK = Path(__file__).resolve().parent.parent / "tests" / "speed_task"
FIXED = "tests/test_speed.py::test_speed"


def _plain_benchmark_medians(program: Path) -> dict[str, float]:
    """Each benchmark test's median per call under pytest-benchmark itself (the task's own
    test file, in process, no proxy, no sandbox), in seconds, by test name."""
    with tempfile.TemporaryDirectory() as home:
        root = Path(home)
        (root / "solution.py").write_text(program.read_text(encoding="utf-8"), encoding="utf-8")
        shutil.copy(TASK / "tests" / "test_speed.py", root / "test_speed.py")
        out = root / "bench.json"
        subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
             f"--benchmark-json={out}", "test_speed.py"],
            cwd=root, check=True, capture_output=True,
        )  # fmt: skip
        found = json.loads(out.read_text(encoding="utf-8"))["benchmarks"]
        return {b["name"]: float(b["stats"]["median"]) for b in found}


def _combined(ratios: list[float]) -> float:
    """The per-test ratios combined as the ``speedup`` signal combines them (the lower
    median, results/measure.py)."""
    return statistics.median_low(ratios)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    names = sorted(p.stem for p in (TASK / "candidates").glob("*.py"))
    fixed: dict[str, list[float]] = {}
    combined: dict[str, list[float]] = {}
    with Evaluator(TASK / "tests", reference=TASK / "reference", dedupe=False) as ev:
        reference_fixed = ev.reference.bench[(False, FIXED)]
        for name in names:
            speedups, rates, codes = [], [], set()
            for _ in range(args.rounds):
                result = ev.score(TASK / "candidates" / f"{name}.py")
                rates.append(result.signal("pass_rate") or 0.0)
                speedups.append(
                    "rejected" if result.integrity.rejected else result.signal("speedup")
                )
                codes |= {r.code for r in result.integrity.reasons}
                if isinstance(speedups[-1], float):
                    combined.setdefault(name, []).append(speedups[-1])
                for t in result.tests:
                    if t.nodeid == FIXED and t.benchmark and not result.integrity.rejected:
                        fixed.setdefault(name, []).append(reference_fixed / t.benchmark.median_s)
            shown = [
                s if isinstance(s, str) else "-" if s is None else f"{s:.2f}" for s in speedups
            ]
            print(
                f"{name:20} pass {statistics.median(rates):.2f}  speedup {shown}  {sorted(codes)}"
            )
    print("\nhonest candidates: per-test ratios and the combined figure, pytest-benchmark vs ours")
    # pytest-benchmark's own figures move by 10-20% from one run to the next: each program
    # is run as many times as it was scored here, the reference and it in turn, and each
    # test's ratio is the median of the runs' ratios.
    for name in ("honest_fast", "honest_reference"):
        runs = []
        for _ in range(args.rounds):
            plain_reference = _plain_benchmark_medians(TASK / "reference" / "solution.py")
            plain = _plain_benchmark_medians(TASK / "candidates" / f"{name}.py")
            runs.append({test: plain_reference[test] / plain[test] for test in plain})
        ratios = {test: statistics.median(run[test] for run in runs) for test in sorted(runs[0])}
        listed = "  ".join(f"{test} {ratio:.2f}x" for test, ratio in ratios.items())
        theirs = _combined(list(ratios.values()))
        ours_fixed = statistics.median(fixed.get(name, [float("nan")]))
        ours = statistics.median(combined.get(name, [float("nan")]))
        gap_fixed = ours_fixed / ratios["test_speed"] - 1
        print(f"{name:20} pytest-benchmark {listed}  combined {theirs:.2f}x")
        print(f"{'':20} scorewright test_speed {ours_fixed:.2f}x ({gap_fixed:+.0%})"
              f"  speedup {ours:.2f}x ({ours / theirs - 1:+.0%})")  # fmt: skip


if __name__ == "__main__":
    main()
