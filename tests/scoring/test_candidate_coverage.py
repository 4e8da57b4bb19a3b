"""Line coverage of the candidate in evaluator mode (``Evaluator(coverage=True)``): measured
where its code runs, decided by the parent, and equal to coverage.py's own figure for a
plain ``coverage run -m pytest`` of the same files."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import coverage
import pytest

from pytest_scorewright.evaluator import Evaluator

pytestmark = pytest.mark.sandbox

TASK = Path(__file__).resolve().parents[1] / "corpus" / "numbers"
RIGHT = (TASK / "reference" / "solution.py").read_text(encoding="utf-8")

#: What an LLM adds around a right answer: code no test runs.
WITH_DEAD_CODE = (
    RIGHT
    + '''

def lcm(a, b):
    """Not asked for, never tested."""
    if a == 0 or b == 0:
        return 0
    return abs(a * b) // gcd(a, b)


if __name__ == "__main__":
    for n in range(10):
        print(n, is_prime(n), fib(n))
'''
)

#: A candidate that tells the measurement every line of its file ran, and a line of a
#: test file: it can claim its own file in full and nothing more.
FORGING = (
    RIGHT
    + """
import gc as _gc
for _found in _gc.get_objects():
    if type(_found).__name__ == "Coverage":
        _data = _found.get_data()
        _data.add_lines({__file__: list(range(1, 500))})
        _data.add_lines({__file__.rsplit("/", 2)[0] + "/tests/test_numbers.py": [1, 2]})
"""
)


@pytest.fixture(scope="module", params=["process", "in-process"])
def evaluator(request: pytest.FixtureRequest) -> Iterator[Evaluator]:
    with Evaluator(
        TASK / "tests",
        heldout=TASK / "heldout",
        reference=TASK / "reference",
        isolation=request.param,
        coverage=True,
    ) as ev:
        assert ev.isolated == (request.param == "process")
        yield ev


def _plain_coverage(candidate: str, tmp_path: Path) -> float:
    """coverage.py's own line coverage of the candidate under plain pytest, both suites."""
    work = tmp_path / "plain"
    work.mkdir()
    (work / "solution.py").write_text(candidate, encoding="utf-8")
    shutil.copytree(TASK / "tests", work / "tests")
    shutil.copytree(TASK / "heldout", work / "heldout")
    env = {**os.environ, "PYTHONPATH": str(work)}
    run = [sys.executable, "-m", "coverage"]
    subprocess.run(
        [
            *run,
            "run",
            f"--include={work}/solution.py",
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests",
            "heldout",
        ],
        cwd=work,
        env=env,
        check=False,
        capture_output=True,
    )
    subprocess.run(
        [*run, "json", "-o", "cov.json"], cwd=work, env=env, check=True, capture_output=True
    )
    totals = json.loads((work / "cov.json").read_text())["totals"]
    return float(totals["covered_lines"] / totals["num_statements"])


@pytest.mark.parametrize("candidate", [RIGHT, WITH_DEAD_CODE], ids=["right", "dead code"])
def test_line_coverage_equals_coverage_pys_own_under_plain_pytest(
    evaluator: Evaluator, candidate: str, tmp_path: Path
) -> None:
    path = tmp_path / "candidate.py"
    path.write_text(candidate, encoding="utf-8")
    result = evaluator.score(path)
    assert result.signal("pass_rate") == 1.0, result.error
    expected = _plain_coverage(candidate, tmp_path)
    assert result.signal("line_coverage") == pytest.approx(expected)
    if candidate is WITH_DEAD_CODE:
        assert expected < 0.85  # the unused function and the demo block are not covered


def test_a_file_of_a_candidate_directory_no_test_imports_counts_as_not_run(
    evaluator: Evaluator, tmp_path: Path
) -> None:
    package = tmp_path / "candidate"
    package.mkdir()
    (package / "solution.py").write_text(RIGHT, encoding="utf-8")
    (package / "unused.py").write_text("X = 1\nY = 2\n\n\ndef z():\n    return 3\n")
    result = evaluator.score(package)
    assert result.signal("pass_rate") == 1.0, result.error
    # Every statement of solution.py ran; unused.py's four did not.
    ran = len(coverage.Coverage(data_file=None).analysis2(str(package / "solution.py"))[1])
    assert result.signal("line_coverage") == pytest.approx(ran / (ran + 4))


def test_a_forged_claim_reaches_its_own_files_in_full_and_nothing_more(
    evaluator: Evaluator, tmp_path: Path
) -> None:
    path = tmp_path / "forging.py"
    path.write_text(FORGING.replace(RIGHT, "def is_prime(n):\n    return True\n"), "utf-8")
    result = evaluator.score(path)
    assert (result.signal("pass_rate") or 0.0) < 1.0
    assert result.signal("line_coverage") == 1.0  # claimed, and capped at its statements


def test_without_coverage_there_is_no_coverage_signal(tmp_path: Path) -> None:
    with Evaluator(TASK / "tests", reference=TASK / "reference") as ev:
        result = ev.score(TASK / "reference" / "solution.py")
    assert result.signal("pass_rate") == 1.0
    assert result.signal("line_coverage") is None
