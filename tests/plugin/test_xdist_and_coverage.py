"""Coverage agrees with coverage.py's own figure, and `pytest -n 2` scores like `-n 0`."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from tests.conftest import RunScored

CODE_UNDER_TEST = """
def classify(n):
    if n < 0:
        return "negative"
    if n == 0:
        return "zero"
    if n > 1000:
        return "huge"
    return "positive"


def never_called():
    x = 1
    return x
"""

TESTS = """
import pytest
from mypkg.core import classify

def test_negative(): assert classify(-3) == "negative"
def test_zero(): assert classify(0) == "zero"
@pytest.mark.parametrize("n", range(20))
def test_positive(n): assert classify(n + 1) == "positive"
def test_wrong(): assert classify(5) == "huge"
@pytest.mark.skip(reason="later")
def test_skipped(): pass
@pytest.mark.heldout
def test_heldout_pass(): assert classify(2000) == "huge"
@pytest.mark.heldout
def test_heldout_fail(): assert classify(-1) == "zero"

def test_subtests(subtests):
    for n in range(30):
        with subtests.test(n=n):
            assert classify(n) != "negative"
            assert n != 17
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.mkpydir("mypkg")
    pytester.makepyfile(**{"mypkg/core": CODE_UNDER_TEST, "test_core": TESTS})
    pytester.makeini("[pytest]\npythonpath = .\n")
    return pytester


def _comparable(data: dict[str, Any]) -> list[tuple[Any, ...]]:
    return sorted(
        (t["nodeid"], t["outcome"], t["phase"], t["heldout"], str(t.get("subtests")))
        for t in data["tests"]
    )


def _signals(data: dict[str, Any]) -> dict[str, float]:
    return {s["name"]: s["value"] for s in data["signals"] if s["name"] != "duration_s"}


def test_xdist_gives_the_same_outcomes_and_coverage_as_a_single_process(
    project: pytest.Pytester, run_scored: RunScored
) -> None:
    args = ("--scorewright-cov=mypkg", "--scorewright-cov-branch")
    single = run_scored(*args, "-n", "0", subprocess=True, out="single.json")
    multi = run_scored(*args, "-n", "2", subprocess=True, out="multi.json")
    assert _comparable(single.data) == _comparable(multi.data)
    assert _signals(single.data) == _signals(multi.data)
    assert single.signal("tests_total") == 27
    assert single.test("test_subtests")["subtests"] == {"passed": 29, "failed": 1}
    assert multi.test("test_subtests")["outcome"] == "failed"
    assert single.signal("line_coverage") is not None
    assert single.signal("branch_coverage") is not None
    multi.run.stdout.no_fnmatch_line("*CoverageWarning*")


def test_line_coverage_matches_coverage_py_for_the_same_run(
    project: pytest.Pytester, run_scored: RunScored
) -> None:
    scored = run_scored("--scorewright-cov=mypkg", subprocess=True)
    project.run(
        sys.executable,
        "-m",
        "coverage",
        "run",
        "--source=mypkg",
        "-m",
        "pytest",
        "-p",
        "no:scorewright",
        "-q",
    )
    project.run(sys.executable, "-m", "coverage", "json", "-o", "cov.json")
    totals = json.loads((project.path / "cov.json").read_text())["totals"]
    expected = totals["covered_lines"] / totals["num_statements"]
    assert scored.signal("line_coverage") == pytest.approx(expected, abs=1e-9)
    assert scored.need("line_coverage") < 1.0  # never_called() is not covered


def test_coverage_counts_source_files_that_were_never_imported(
    project: pytest.Pytester, run_scored: RunScored
) -> None:
    project.makepyfile(**{"mypkg/unused": "def f():\n    return 1\n"})
    with_unused = run_scored("--scorewright-cov=mypkg", subprocess=True)
    project.path.joinpath("mypkg/unused.py").unlink()
    without = run_scored("--scorewright-cov=mypkg", subprocess=True)
    assert with_unused.need("line_coverage") < without.need("line_coverage")


def test_no_coverage_signal_without_the_option(
    project: pytest.Pytester, run_scored: RunScored
) -> None:
    scored = run_scored()
    assert scored.signal("line_coverage") is None
    assert scored.signal("branch_coverage") is None


def test_identical_module_skips_are_all_recorded_under_xdist(
    pytester: pytest.Pytester, run_scored: RunScored
) -> None:
    # Same location and reason: xdist forwards only the first such report to the controller.
    pytester.makepyfile(
        helper=(
            "import pytest\n\ndef need_backend():\n"
            "    pytest.skip('no backend', allow_module_level=True)\n"
        ),
        test_one="import helper\nhelper.need_backend()\n",
        test_two="import helper\nhelper.need_backend()\n",
        test_ok="def test_ok(): pass\n",
    )
    pytester.makeini("[pytest]\npythonpath = .\n")
    single = run_scored("-n", "0", subprocess=True, out="single.json")
    multi = run_scored("-n", "2", subprocess=True, out="multi.json")
    assert _comparable(single.data) == _comparable(multi.data)
    assert multi.outcomes() == {
        "test_one.py": "skipped",
        "test_two.py": "skipped",
        "test_ok.py::test_ok": "passed",
    }


@pytest.mark.parametrize(("branch", "env_core"), [(False, None), (True, None), (False, "ctrace")])
def test_coverage_uses_the_sysmon_core_where_it_is_cheaper(
    pytester: pytest.Pytester,
    run_scored: RunScored,
    monkeypatch: pytest.MonkeyPatch,
    branch: bool,
    env_core: str | None,
) -> None:
    # sys.monitoring from Python 3.12, for branches from 3.14 (coverage.py's own limits); a
    # core chosen by COVERAGE_CORE is left alone.
    monkeypatch.delenv("COVERAGE_CORE", raising=False)
    if env_core:
        monkeypatch.setenv("COVERAGE_CORE", env_core)
    pytester.makepyfile(
        test_core=(
            "import coverage\n\ndef test_core():\n"
            "    print('CORE', dict(coverage.Coverage.current().sys_info())['core'])\n"
        )
    )
    args = ["--scorewright-cov=test_core", "-s", *(["--scorewright-cov-branch"] if branch else [])]
    scored = run_scored(*args, subprocess=True)
    usable = sys.version_info >= (3, 14) or (sys.version_info >= (3, 12) and not branch)
    expected = "SysMonitor" if usable and not env_core else "CTracer"
    assert f"CORE {expected}" in scored.run.stdout.str()
