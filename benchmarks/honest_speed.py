"""An honestly faster program keeps its speed: on several speed tasks, the ``speedup`` an
honest faster program is credited with default settings, beside the ratio pytest-benchmark's
own fixture measures for the same two programs on the same test (in process, no proxy, no
sandbox). The target (issue 41): within 20% of pytest-benchmark on every task, quiet.

    python -m benchmarks.honest_speed [--rounds N] [--task NAME ...]

Each task is a test file with a correctness test and one benchmark on fixed arguments, a
reference and an honest faster program (no cache, no table: the work done on every call).
The tasks' calls take 1-40 ms, so a round trip to the candidate's process (tens of
microseconds) is not what is measured. ``primes`` is tests/speed_task's fixed-argument test.

Both sides are medians over ``--rounds``: ours of N scorings (one Evaluator), pytest-benchmark's
of N runs, the reference and the candidate in turn, each run's ratio then the median ratio.
Say what else ran on the machine when you quote a figure.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from pytest_scorewright.evaluator import Evaluator

_BENCH = "@pytest.mark.benchmark(max_time=0.3)\n"

TASKS: dict[str, dict[str, str]] = {
    "primes": {
        "test": (
            "import pytest\nimport solution\n\n\n"
            "@pytest.mark.parametrize(('n', 'count'), [(0, 0), (3, 1), (100, 25), (7919, 999)])\n"
            "def test_counts(n, count):\n    assert solution.count_primes(n) == count\n\n\n"
            + _BENCH
            + "def test_speed(benchmark):\n"
            "    assert benchmark(solution.count_primes, 20_000) == 2262\n"
        ),
        "reference": (
            Path(__file__).parent.parent / "tests/speed_task/reference/solution.py"
        ).read_text(encoding="utf-8"),
        "fast": (
            Path(__file__).parent.parent / "tests/speed_task/candidates/honest_fast.py"
        ).read_text(encoding="utf-8"),
    },
    "word_freq": {
        "test": (
            "import random\n\nimport pytest\nimport solution\n\n"
            "WORDS = [f'w{i}' for i in range(60)]\n"
            "RNG = random.Random(7)\n"
            "TEXT = ' '.join(RNG.choice(WORDS) for _ in range(20_000))\n\n\n"
            "def test_small():\n"
            "    assert solution.top_words('b a b c a b', 2) == [('b', 3), ('a', 2)]\n\n\n"
            "def test_ties_alphabetical():\n"
            "    assert solution.top_words('y x', 2) == [('x', 1), ('y', 1)]\n\n\n"
            + _BENCH
            + "def test_speed(benchmark):\n"
            "    found = benchmark(solution.top_words, TEXT, 5)\n"
            "    assert len(found) == 5 and found[0][1] >= found[-1][1]\n"
        ),
        "reference": (
            "def top_words(text, k):\n"
            "    words = text.split()\n"
            "    ranked = sorted(set(words), key=lambda w: (-words.count(w), w))\n"
            "    return [(w, words.count(w)) for w in ranked[:k]]\n"
        ),
        "fast": (
            "from collections import Counter\n\n\n"
            "def top_words(text, k):\n"
            "    counts = Counter(text.split())\n"
            "    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:k]\n"
        ),
    },
    "matmul": {
        "test": (
            "import random\n\nimport pytest\nimport solution\n\n"
            "RNG = random.Random(3)\n"
            "A = [[RNG.randint(-9, 9) for _ in range(60)] for _ in range(60)]\n"
            "B = [[RNG.randint(-9, 9) for _ in range(60)] for _ in range(60)]\n\n\n"
            "def test_identity():\n"
            "    identity = [[1, 0], [0, 1]]\n"
            "    assert solution.matmul([[1, 2], [3, 4]], identity) == [[1, 2], [3, 4]]\n\n\n"
            "def test_rectangular():\n"
            "    assert solution.matmul([[1, 2, 3]], [[1], [2], [3]]) == [[14]]\n\n\n"
            + _BENCH
            + "def test_speed(benchmark):\n"
            "    found = benchmark(solution.matmul, A, B)\n"
            "    assert found[0][0] == sum(A[0][k] * B[k][0] for k in range(60))\n"
        ),
        "reference": (
            "def matmul(a, b):\n"
            "    rows, inner, cols = len(a), len(b), len(b[0])\n"
            "    out = [[0] * cols for _ in range(rows)]\n"
            "    for i in range(rows):\n"
            "        for j in range(cols):\n"
            "            total = 0\n"
            "            for k in range(inner):\n"
            "                total += a[i][k] * b[k][j]\n"
            "            out[i][j] = total\n"
            "    return out\n"
        ),
        "fast": (
            "import operator\n\n\n"
            "def matmul(a, b):\n"
            "    columns = list(zip(*b))\n"
            "    mul = operator.mul\n"
            "    return [[sum(map(mul, row, col)) for col in columns] for row in a]\n"
        ),
    },
    "running_median": {
        "test": (
            "import random\n\nimport pytest\nimport solution\n\n"
            "RNG = random.Random(5)\n"
            "DATA = [RNG.randint(0, 10**6) for _ in range(1200)]\n\n\n"
            "def test_small():\n"
            "    assert solution.running_median([3, 1, 2]) == [3, 1, 2]\n\n\n"
            + _BENCH
            + "def test_speed(benchmark):\n"
            "    found = benchmark(solution.running_median, DATA)\n"
            "    assert len(found) == len(DATA) and found[0] == DATA[0]\n"
        ),
        "reference": (
            "def running_median(values):\n"
            "    out = []\n"
            "    for i in range(1, len(values) + 1):\n"
            "        window = sorted(values[:i])\n"
            "        out.append(window[(i - 1) // 2])\n"
            "    return out\n"
        ),
        "fast": (
            "import bisect\n\n\n"
            "def running_median(values):\n"
            "    window, out = [], []\n"
            "    for value in values:\n"
            "        bisect.insort(window, value)\n"
            "        out.append(window[(len(window) - 1) // 2])\n"
            "    return out\n"
        ),
    },
}


def _write(root: Path, task: dict[str, str]) -> None:
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "test_task.py").write_text(task["test"], encoding="utf-8")
    for name in ("reference", "fast"):
        (root / name).mkdir()
        (root / name / "solution.py").write_text(task[name], encoding="utf-8")


def _plain_median(root: Path, program: str) -> float:
    """test_speed's median per call under pytest-benchmark itself, in seconds."""
    with tempfile.TemporaryDirectory() as home:
        work = Path(home)
        (work / "solution.py").write_text(
            (root / program / "solution.py").read_text(encoding="utf-8"), encoding="utf-8"
        )
        (work / "test_task.py").write_text(
            (root / "tests" / "test_task.py").read_text(encoding="utf-8"), encoding="utf-8"
        )
        out = work / "bench.json"
        subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
             f"--benchmark-json={out}", "test_task.py"],
            cwd=work, check=True, capture_output=True,
            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        )  # fmt: skip
        found = json.loads(out.read_text(encoding="utf-8"))["benchmarks"]
        return next(float(b["stats"]["median"]) for b in found if b["name"] == "test_speed")


def measure(name: str, rounds: int, isolation: str) -> tuple[float, float, list[float]]:
    """(pytest-benchmark's ratio, ours, our scorings) for one task."""
    with tempfile.TemporaryDirectory() as home:
        root = Path(home) / name
        _write(root, TASKS[name])
        with Evaluator(
            root / "tests", reference=root / "reference", isolation=isolation, dedupe=False
        ) as ev:
            ours = []
            for _ in range(rounds):
                result = ev.score(root / "fast")
                assert result.signal("pass_rate") == 1.0, result.error
                assert not result.integrity.flagged, result.integrity.reasons
                ours.append(result.signal("speedup") or float("nan"))
        theirs = []
        for _ in range(rounds):
            reference = _plain_median(root, "reference")
            theirs.append(reference / _plain_median(root, "fast"))
        return statistics.median(theirs), statistics.median(ours), ours


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--task", action="append", choices=sorted(TASKS))
    parser.add_argument("--isolation", default="auto", choices=["auto", "process", "in-process"])
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f}; cpus: {os.cpu_count()}")
    print(f"| task | pytest-benchmark | scorewright ({args.isolation}) | gap | our scorings |")
    print("| --- | --- | --- | --- | --- |")
    for name in args.task or sorted(TASKS):
        theirs, ours, each = measure(name, args.rounds, args.isolation)
        shown = ", ".join(f"{s:.2f}" for s in each)
        print(f"| {name} | {theirs:.2f}x | {ours:.2f}x | {ours / theirs - 1:+.0%} | {shown} |")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
