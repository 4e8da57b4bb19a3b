"""The sandbox on the hosts CI is not: an ordinary user, one without namespaces, a container.

CI runs as root. Here the attack and degraded-mode tests run again in each other mode, made
by tests/modes.py (an unprivileged uid of this session's own; seccomp refusing namespaces as
Docker's default profile does), and ``require_isolation`` is shown refusing where a
guarantee does not hold. docs/sandbox.md's mode table is read off these runs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from tests.modes import session_uid

pytestmark = [
    pytest.mark.sandbox,
    pytest.mark.skipif(
        os.geteuid() != 0, reason="needs root, to make an unprivileged uid and a container"
    ),
]

ROOT = Path(__file__).resolve().parent.parent
MODULES = ("tests/test_sandbox_attacks.py", "tests/test_sandbox_degraded.py")

#: Tests that skip in each mode because what they show does not hold there (the result then
#: says so: every attack test checks that the result claims what holds, and no more).
EXPECTED_SKIPS = {
    "user": set(),
    "user-no-namespaces": {"test_honest_multiprocessing_works_on_a_private_dev_shm"},
    "container": {"test_honest_multiprocessing_works_on_a_private_dev_shm"},
}


@pytest.fixture
def home() -> Iterator[Path]:
    """A directory the session's unprivileged uid owns (pytest's own tmp_path is under a
    directory only root may enter)."""
    path = Path(tempfile.mkdtemp(prefix="sw-modes-"))
    os.chmod(path, 0o755)  # noqa: S103 - the other uid must enter it
    os.chown(path, session_uid(), session_uid())
    yield path
    shutil.rmtree(path, ignore_errors=True)


def run_in(
    mode: str, home: Path, command: Sequence[str], timeout: float
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["HOME"] = str(home)
    env["SCOREWRIGHT_TEST_ISOLATIONS"] = "auto"  # the default; root's run covers in-process
    return subprocess.run(
        [sys.executable, "-m", "tests.modes", mode, str(session_uid()), "--", *command],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _namespaces_refused(mode: str, home: Path) -> str:
    """Why namespaces are refused to ``mode`` on this machine ("" where they work)."""
    probe = [sys.executable, "-m", "pytest_scorewright.sandbox.features"]
    return run_in(mode, home, probe, timeout=60).stdout.strip()


@pytest.mark.parametrize("mode", ["user", "user-no-namespaces", "container"])
def test_the_attack_and_degraded_mode_tests_hold_in_every_mode(mode: str, home: Path) -> None:
    if mode == "user" and (why := _namespaces_refused(mode, home)):
        pytest.skip(f"this machine refuses an ordinary user namespaces: {why}")
    report = home / "report.xml"
    done = run_in(
        mode,
        home,
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            f"--basetemp={home / 'tmp'}",
            f"--junitxml={report}",
            "-q",
            *MODULES,
        ],
        timeout=600,
    )
    assert report.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    failed, skipped, passed = [], set(), []
    for case in ET.parse(report).getroot().iter("testcase"):  # noqa: S314 - our own file
        name = case.get("name", "").split("[")[0]
        if case.find("failure") is not None or case.find("error") is not None:
            failed.append(case.get("name"))
        elif case.find("skipped") is not None:
            skipped.add(name)
        else:
            passed.append(name)
    assert failed == [], done.stdout[-6000:]
    assert skipped == EXPECTED_SKIPS[mode], done.stdout[-3000:]
    assert len(passed) > 30
    assert done.returncode == 0


def _task(home: Path) -> list[str]:
    (home / "tests").mkdir()
    (home / "tests" / "test_add.py").write_text(
        "from solution import add\n\ndef test_small():\n    assert add(1, 2) == 3\n"
    )
    (home / "c.py").write_text("def add(a, b):\n    return a + b\n")
    return ["score", str(home / "c.py"), "--tests", str(home / "tests"), "--timeout", "10"]


def test_require_isolation_refuses_in_a_container_with_one_line_naming_the_guarantee(
    home: Path,
) -> None:
    cli = [sys.executable, "-m", "pytest_scorewright.cli", *_task(home)]
    refused = run_in("container", home, [*cli, "--require-isolation"], timeout=120)
    assert refused.returncode == 2, refused.stderr
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1, refused.stderr
    assert lines[0].startswith("scorewright: error: require_isolation: network (")
    assert "cannot be met here: no namespaces (unshare: Operation not permitted)" in lines[0]
    assert refused.stdout == ""  # no result: it refused to score
    # What a container does keep can still be required.
    kept = run_in(
        "container",
        home,
        [*cli, "--require-isolation=processes_end,process_limit,filesystem"],
        timeout=120,
    )
    assert kept.returncode == 0, kept.stderr
    assert '"pass_rate"' in kept.stdout


def test_require_isolation_holds_for_an_ordinary_user_with_namespaces(home: Path) -> None:
    cli = [sys.executable, "-m", "pytest_scorewright.cli", *_task(home)]
    done = run_in("user", home, [*cli, "--require-isolation"], timeout=120)
    assert done.returncode == 0, done.stderr
    assert '"user_namespace": true' in done.stdout
