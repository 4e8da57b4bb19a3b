"""Placing a run with the candidate apart on one CPU (sandbox/placement.py): the test process
and the candidate's process share it while a CPU is free, and spread with ``one_cpu=False``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_scorewright.evaluator import Evaluator
from pytest_scorewright.limits import Limits
from pytest_scorewright.sandbox.placement import free_cpu

SOLUTION = """
import os

def cpus():
    return sorted(os.sched_getaffinity(0))
"""

TESTS = """
import os
from solution import cpus

def test_where_they_run():
    print("TESTS", sorted(os.sched_getaffinity(0)), "CANDIDATE", cpus())
"""


def test_a_cpu_no_run_holds_is_chosen_and_none_when_all_are_held() -> None:
    assert free_cpu([], [0, 1]) in (0, 1)
    assert free_cpu([0], [0, 1]) == 1
    assert free_cpu([1, None], [0, 1]) == 0
    assert free_cpu([0, 1], [0, 1]) is None
    assert free_cpu([], []) is None


def _where(tmp_path: Path, limits: Limits) -> str:
    (tmp_path / "tests").mkdir(exist_ok=True)
    (tmp_path / "tests" / "test_where.py").write_text(TESTS)
    (tmp_path / "solution.py").write_text(SOLUTION)
    with Evaluator(
        tmp_path / "tests", reference=tmp_path / "solution.py", isolation="process", limits=limits
    ) as ev:
        result = ev.score(tmp_path / "solution.py")
    assert result.ok, result.error
    assert result.limits is not None
    assert result.limits["one_cpu"] is limits.one_cpu
    output = str(result.extra.get("output"))
    return output[output.index("TESTS") :].splitlines()[0]


@pytest.mark.sandbox
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs to choose from")
def test_the_tests_and_the_candidate_share_one_cpu_by_default(tmp_path: Path) -> None:
    line = _where(tmp_path, Limits())
    tests, candidate = line.removeprefix("TESTS ").split(" CANDIDATE ")
    assert tests == candidate
    assert len(tests.strip("[]").split(",")) == 1


@pytest.mark.sandbox
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs to choose from")
def test_spread_runs_keep_every_cpu(tmp_path: Path) -> None:
    every = str(sorted(os.sched_getaffinity(0)))
    assert _where(tmp_path, Limits(one_cpu=False)) == f"TESTS {every} CANDIDATE {every}"
