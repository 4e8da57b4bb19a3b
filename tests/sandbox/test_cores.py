"""`-j auto`: the CPUs a process may use, its affinity and cgroup CPU quota respected."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_scorewright.cli import build_parser
from pytest_scorewright.sandbox.placement import _cgroup_quota, available_cores

TASK = Path(__file__).resolve().parents[1] / "corpus" / "numbers"


def _cgroup_v2(tmp_path: Path, limits: dict[str, str]) -> tuple[str, str]:
    root = tmp_path / "sys"
    for path, value in limits.items():
        (root / path).mkdir(parents=True, exist_ok=True)
        (root / path / "cpu.max").write_text(value + "\n")
    proc = tmp_path / "cgroup"
    proc.write_text("0::/outer/inner\n")
    return str(root), str(proc)


def test_the_tightest_v2_quota_on_the_way_to_the_root_counts(tmp_path: Path) -> None:
    root, proc = _cgroup_v2(
        tmp_path, {"outer": "150000 100000", "outer/inner": "max 100000", "": "max 100000"}
    )
    assert _cgroup_quota(root, proc) == 1.5
    root, proc = _cgroup_v2(tmp_path / "b", {"outer": "max 100000", "outer/inner": "max 100000"})
    assert _cgroup_quota(root, proc) is None


def test_a_v1_quota_counts(tmp_path: Path) -> None:
    cpu = tmp_path / "sys" / "cpu,cpuacct" / "job"
    cpu.mkdir(parents=True)
    (cpu / "cpu.cfs_quota_us").write_text("250000\n")
    (cpu / "cpu.cfs_period_us").write_text("100000\n")
    (tmp_path / "cgroup").write_text("4:memory:/job\n2:cpu,cpuacct:/job\n")
    assert _cgroup_quota(str(tmp_path / "sys"), str(tmp_path / "cgroup")) == 2.5


def test_unreadable_cgroup_files_mean_no_quota(tmp_path: Path) -> None:
    assert _cgroup_quota(str(tmp_path), str(tmp_path / "missing")) is None
    (tmp_path / "cgroup").write_text("0::/x\n")
    assert _cgroup_quota(str(tmp_path), str(tmp_path / "cgroup")) is None


def test_available_cores_follow_this_process_affinity() -> None:
    cores, why = available_cores()
    assert cores == len(os.sched_getaffinity(0))
    assert "CPU" in why


@pytest.mark.parametrize(("given", "parsed"), [("auto", "auto"), ("3", 3)])
def test_jobs_takes_a_number_or_auto_and_defaults_to_auto(given: str, parsed: object) -> None:
    parser = build_parser()
    assert parser.parse_args(["score-many", "c.py", "--tests", "t", "-j", given]).jobs == parsed
    assert parser.parse_args(["score-many", "c.py", "--tests", "t"]).jobs == "auto"


@pytest.mark.parametrize("given", ["0", "many", "-2"])
def test_a_bad_jobs_value_is_one_line(given: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["score-many", "c.py", "--tests", "t", "-j", given])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "-j/--jobs" in err
    assert repr(given) in err


@pytest.mark.sandbox
@pytest.mark.skipif(shutil.which("taskset") is None, reason="needs taskset")
def test_score_many_by_default_takes_the_cpus_it_may_run_on(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            "taskset",
            "-c",
            "0",
            sys.executable,
            "-m",
            "pytest_scorewright.cli",
            "score-many",
            str(TASK / "candidates" / "honest_memo.py"),
            "--tests",
            str(TASK / "tests"),
            "--reference",
            str(TASK / "reference"),
            "--out-dir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "scorewright: -j auto: 1 at once (the 1 CPU this process may run on)" in done.stderr
    assert "with -j 1;" in done.stderr
