"""What a hung candidate costs with default limits: a 10-test visible suite and a 5-test
held-out suite, a right reference, and candidates that spin or sleep in every call.

Reports the wall seconds of ``Evaluator.score`` for each (median of ``--rounds``), with the
per-test limit the reference calibrated. Issue 26's target: <= 3 s for a hung candidate of a
10-test suite on a quiet machine.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from pytest_scorewright.evaluator import Evaluator

CANDIDATES = {
    "right": "def f(x):\n    return 2 * x\n",
    "spins": "def f(x):\n    while True:\n        pass\n",
    "sleeps": "import time\n\ndef f(x):\n    time.sleep(3600)\n",
    "hangs on one input": "def f(x):\n    while x == 3:\n        pass\n    return 2 * x\n",
}


def _suite(root: Path, name: str, count: int, start: int) -> Path:
    folder = root / name
    folder.mkdir()
    lines = ["import solution", ""]
    for i in range(start, start + count):
        lines += [f"def test_{i}():", f"    assert solution.f({i}) == {2 * i}", "", ""]
    (folder / f"test_{name}.py").write_text("\n".join(lines), encoding="utf-8")
    return folder


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    rounds = parser.parse_args().rounds
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        tests, heldout = _suite(root, "tests", 10, 0), _suite(root, "heldout", 5, 100)
        for name, source in CANDIDATES.items():
            (root / f"{name.replace(' ', '_')}.py").write_text(source, encoding="utf-8")
        with Evaluator(
            tests, heldout=heldout, reference=root / "right.py", dedupe=False
        ) as evaluator:
            print(f"per-test limit: {evaluator.limits.test_seconds:g} s (calibrated)")
            for name in CANDIDATES:
                times = []
                for _ in range(rounds):
                    started = time.perf_counter()
                    result = evaluator.score(root / f"{name.replace(' ', '_')}.py")
                    times.append(time.perf_counter() - started)
                outcomes = [t.outcome for t in result.tests]
                print(
                    f"{name:>20}: {statistics.median(times):6.2f} s  "
                    f"pass_rate {result.signal('pass_rate')}  "
                    f"timeouts {outcomes.count('timeout')} not_run {outcomes.count('not_run')}"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
