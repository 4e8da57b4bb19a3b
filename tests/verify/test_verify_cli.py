"""``scorewright verify`` from the command line: a real task's repository (semver's fix of
``Version.replace``, built from its sdists), the harness outputs it writes, and bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.verify_tasks import TASKS, FetchError, build, patches
from pytest_scorewright import cli


def _task_with_gold_patch(tmp_path: Path) -> tuple[Any, Any]:
    """The first real task, built in ``tmp_path``, with its test patch and gold patch written
    there as test.diff and model.diff (skipped when PyPI cannot be reached)."""
    real = TASKS[0]
    try:
        built = build(real, tmp_path)
    except FetchError as exc:
        pytest.skip(f"{real.dist} could not be downloaded from PyPI: {exc}")
    (tmp_path / "test.diff").write_text(built.test_patch)
    (tmp_path / "model.diff").write_text(patches(built)["gold"])
    return real, built


@pytest.mark.sandbox
def test_verify_writes_swebench_harbor_ctrf_and_scoreresult_outputs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    real, built = _task_with_gold_patch(tmp_path)
    (tmp_path / "p2p.txt").write_text("\n".join(real.pass_to_pass) + "\n")
    out = tmp_path / "out"
    code = cli.main(
        [
            *("verify", "--repo", str(built.repo), "--base", built.base),
            *("--patch", str(tmp_path / "model.diff"), "--test-patch", str(tmp_path / "test.diff")),
            *("--fail-to-pass", json.dumps(list(real.fail_to_pass))),
            *("--pass-to-pass", f"@{tmp_path / 'p2p.txt'}", "--instance-id", "semver-426"),
            *("--report", str(out / "report.json"), "--harbor", str(out / "verifier")),
            *("--ctrf", str(out / "ctrf.json"), "--out", str(out / "result.json")),
        ]
    )
    assert code == 0
    assert "scorewright: resolved" in capsys.readouterr().out
    report = json.loads((out / "report.json").read_text())["semver-426"]
    assert report["resolved"] is True
    assert report["tests_status"]["FAIL_TO_PASS"]["success"] == list(real.fail_to_pass)
    assert report["tests_status"]["PASS_TO_PASS"]["success"] == list(real.pass_to_pass)
    reward = json.loads((out / "verifier" / "reward.json").read_text())
    assert reward["reward"] == 1.0
    assert all(isinstance(v, int | float) for v in reward.values())  # Harbor's dict[str, float|int]
    details = json.loads((out / "verifier" / "reward-details.json").read_text())
    assert details["outcomes"] == {real.fail_to_pass[0]: "passed", real.pass_to_pass[0]: "passed"}
    assert json.loads((out / "ctrf.json").read_text())["results"]["summary"]["failed"] == 0
    assert json.loads((out / "result.json").read_text())["ok"] is True


def test_a_directory_that_is_not_a_repository_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "p.diff").write_text("")
    code = cli.main(
        [
            *("verify", "--repo", str(tmp_path), "--base", "HEAD"),
            *("--patch", str(tmp_path / "p.diff"), "--fail-to-pass", "tests/test_a.py::test_a"),
        ]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("scorewright: error: --repo ")
    assert "is not a git repository" in err
    assert len(err.strip().splitlines()) == 1


def test_a_test_id_that_is_not_a_node_id_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / ".git").mkdir()
    code = cli.main(
        [
            *("verify", "--repo", str(tmp_path), "--base", "HEAD", "--tree", str(tmp_path)),
            *("--fail-to-pass", "test_a"),
        ]
    )
    assert code == 2
    assert "is not a pytest node id" in capsys.readouterr().err


@pytest.mark.sandbox
def test_lists_that_do_not_hold_at_the_base_are_a_one_line_error_naming_the_tests(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    real, built = _task_with_gold_patch(tmp_path)
    passing, failing = real.pass_to_pass[0], real.fail_to_pass[0]  # at the base
    capsys.readouterr()  # what building the task printed (a first download of its sdists)
    code = cli.main(
        [
            *("verify", "--repo", str(built.repo), "--base", built.base),
            *("--patch", str(tmp_path / "model.diff"), "--test-patch", str(tmp_path / "test.diff")),
            *("--fail-to-pass", passing, "--pass-to-pass", failing),  # the lists swapped
        ]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("scorewright: error: the task's lists do not hold at the base")
    assert f"{failing} (not passed)" in err
    assert f"{passing} (passed)" in err
    assert len(err.strip().splitlines()) == 1
