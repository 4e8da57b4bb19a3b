"""CTRF reports: `--scorewright-ctrf=PATH` in plugin mode and `scorewright export --ctrf`, each
validated against the official CTRF schema (tests/ctrf/, vendored with its licence)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from pytest_scorewright.results.ctrf import STATUSES

HERE = Path(__file__).resolve().parents[1]
EXAMPLE = HERE.parent / "examples" / "quickstart"
CTRF_SCHEMA = json.loads((HERE / "ctrf" / "ctrf-schema-0.0.json").read_text(encoding="utf-8"))

MIXED = """
import pytest

@pytest.fixture
def broken():
    raise RuntimeError("setup broke")

def test_passes():
    assert True

def test_fails():
    assert 1 == 2, "one is not two"

def test_setup_error(broken):
    pass

def test_skipped():
    pytest.skip("not today")

@pytest.mark.xfail(reason="known")
def test_xfails():
    assert False

@pytest.mark.xfail(reason="known", strict=False)
def test_xpasses():
    assert True

@pytest.mark.heldout
def test_heldout_fails():
    assert "secret" == "expected"

def test_subtests(subtests):
    for n in range(3):
        with subtests.test(n=n):
            assert n >= 0
"""


def check(report: dict[str, Any]) -> dict[str, Any]:
    """Validate against the CTRF schema; the summary must add up to its tests."""
    jsonschema.Draft7Validator(CTRF_SCHEMA).validate(report)
    results: dict[str, Any] = report["results"]
    summary, tests = results["summary"], results["tests"]
    assert summary["tests"] == len(tests)
    assert sum(summary[s] for s in STATUSES) == len(tests)
    for status in STATUSES:
        assert summary[status] == sum(t["status"] == status for t in tests)
    assert summary["start"] <= summary["stop"]
    return results


def same_counts_as_pytest(summary: dict[str, int], outcomes: dict[str, int]) -> None:
    # pytest's own summary line, category by category (see results/ctrf.py for the mapping).
    assert summary["passed"] == outcomes.get("passed", 0)
    assert summary["failed"] == outcomes.get("failed", 0) + outcomes.get("errors", 0)
    assert summary["skipped"] == outcomes.get("skipped", 0) + outcomes.get("xfailed", 0)
    assert summary["other"] == outcomes.get("xpassed", 0)
    assert summary["pending"] == 0


@pytest.mark.slow  # starts a process, or takes seconds of CPU
@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one process", "xdist"])
def test_the_ctrf_report_counts_what_pytest_counts(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    pytester.makepyfile(test_mixed=MIXED)
    run = pytester.runpytest_subprocess(
        "--scorewright-ctrf=r.json", "-p", "no:cacheprovider", *workers
    )
    results = check(json.loads((pytester.path / "r.json").read_text(encoding="utf-8")))
    same_counts_as_pytest(results["summary"], run.parseoutcomes())
    tests = {t["name"].split("::")[-1]: t for t in results["tests"]}
    assert tests["test_fails"]["status"] == "failed"
    assert "one is not two" in tests["test_fails"]["message"]
    assert tests["test_setup_error"]["rawStatus"] == "error"
    assert tests["test_setup_error"]["extra"]["phase"] == "setup"
    assert tests["test_xfails"] == {
        **tests["test_xfails"],
        "status": "skipped",
        "rawStatus": "xfailed",
    }
    assert tests["test_xpasses"]["status"] == "other"
    assert tests["test_heldout_fails"]["extra"]["heldout"] is True
    assert not any(t["extra"]["heldout"] for n, t in tests.items() if n != "test_heldout_fails")
    assert tests["test_subtests"]["extra"]["subtests"] == {"passed": 3}
    assert all(isinstance(t["duration"], int) and t["duration"] >= 0 for t in tests.values())
    assert results["tool"]["name"] == "pytest"
    assert results["tool"]["version"] == pytest.__version__
    run.stdout.fnmatch_lines(["scorewright: wrote CTRF report *r.json"])


@pytest.mark.slow  # starts a process, or takes seconds of CPU
def test_the_quickstart_ctrf_report_matches_pytests_summary(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", str(EXAMPLE), "-p", "no:cacheprovider", "-q",
         f"--scorewright-ctrf={report}"],
        capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout  # the example's candidate fails one held-out test
    results = check(json.loads(report.read_text(encoding="utf-8")))
    summary_line = done.stdout.strip().splitlines()[-1]  # "1 failed, 8 passed, ... in 1.2s"
    outcomes = {
        word: int(count)
        for count, word in (part.split()[:2] for part in summary_line.split(" in ")[0].split(", "))
    }
    assert results["summary"] | {"tests": 0} == {
        **results["summary"],
        "passed": outcomes["passed"],
        "failed": outcomes["failed"],
        "tests": 0,
    }
    assert results["summary"]["tests"] == outcomes["passed"] + outcomes["failed"]
    heldout = [t["name"] for t in results["tests"] if t["extra"]["heldout"]]
    assert heldout
    assert all(name.startswith("heldout/") for name in heldout)


def test_a_collection_error_is_a_failed_entry_as_pytest_counts_it(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_ok="def test_ok():\n    pass\n", test_broken="import nosuchmodule\n")
    run = pytester.runpytest("--scorewright-ctrf=r.json", "-p", "no:cacheprovider")
    results = check(json.loads((pytester.path / "r.json").read_text(encoding="utf-8")))
    assert run.parseoutcomes() == {"errors": 1}
    # pytest stops before running test_ok and does not count it; the report keeps it as a
    # test that never ran.
    assert results["summary"] | {"start": 0, "stop": 0, "duration": 0} == {
        "tests": 2, "passed": 0, "failed": 1, "skipped": 0, "pending": 0, "other": 1,
        "start": 0, "stop": 0, "duration": 0,
    }  # fmt: skip
    by_name = {t["name"]: t for t in results["tests"]}
    assert by_name["test_ok.py::test_ok"]["rawStatus"] == "not_run"
    assert by_name["test_broken.py"]["rawStatus"] == "collection_error"
    assert "nosuchmodule" in by_name["test_broken.py"]["message"]


def test_the_ctrf_path_comes_from_the_environment_or_ini_as_the_out_path_does(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_one="def test_one():\n    pass\n")
    pytester.makeini("[pytest]\nscorewright_ctrf = from-ini.json\n")
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
    check(json.loads((pytester.path / "from-ini.json").read_text(encoding="utf-8")))
    monkeypatch.setenv("SCOREWRIGHT_CTRF", "from-env.json")
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
    check(json.loads((pytester.path / "from-env.json").read_text(encoding="utf-8")))
    monkeypatch.setenv("SCOREWRIGHT_CTRF", " ")
    empty = pytester.runpytest("-p", "no:cacheprovider")
    empty.stderr.fnmatch_lines(["*$SCOREWRIGHT_CTRF is empty: give a file path such as ctrf.json"])


def test_an_unwritable_ctrf_path_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_one="def test_one():\n    pass\n")
    (pytester.path / "adir").mkdir()
    run = pytester.runpytest("--scorewright-ctrf=adir", "-p", "no:cacheprovider")
    assert run.ret == pytest.ExitCode.USAGE_ERROR
    run.stderr.fnmatch_lines(["*--scorewright-ctrf: cannot write the result to *adir*"])


@pytest.mark.slow  # starts a process, or takes seconds of CPU
def test_export_gives_the_report_the_plugin_wrote(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_mixed=MIXED)
    pytester.runpytest_subprocess(
        "--scorewright-out=result.json", "--scorewright-ctrf=r.json", "-p", "no:cacheprovider"
    )
    written = json.loads((pytester.path / "r.json").read_text(encoding="utf-8"))
    exported = subprocess.run(
        [sys.executable, "-m", "pytest_scorewright.cli", "export", "--ctrf", "result.json"],
        capture_output=True, text=True, timeout=60, check=True, cwd=pytester.path,
    )  # fmt: skip
    assert json.loads(exported.stdout) == written
    check(written)
    to_file = subprocess.run(
        [sys.executable, "-m", "pytest_scorewright.cli", "export", "--ctrf", "result.json",
         "--out", "again.json"],
        capture_output=True, text=True, timeout=60, check=True, cwd=pytester.path,
    )  # fmt: skip
    assert to_file.stderr == "scorewright: wrote again.json\n"
    assert json.loads((pytester.path / "again.json").read_text(encoding="utf-8")) == written


@pytest.mark.slow  # starts a process, or takes seconds of CPU
def test_export_of_a_file_that_is_not_a_result_is_a_one_line_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    done = subprocess.run(
        [sys.executable, "-m", "pytest_scorewright.cli", "export", "--ctrf", str(bad)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.startswith("scorewright: error: ")
    assert done.stderr.count("\n") == 1
