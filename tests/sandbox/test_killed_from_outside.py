"""A sandbox's test process SIGKILLed from outside (a scheduler, an operator) mid-run: the run
is made once more rather than scored as the candidate's crash. The candidate cannot send it
that signal itself (its own uid; it is scored for trying), so a kill is the machine's, the
OOM killer's (a second kill then stands) or an operator's."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from pytest_scorewright.evaluator import Evaluator

pytestmark = pytest.mark.sandbox

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart"
RIGHT = (QUICKSTART / "reference" / "solution.py").read_text(encoding="utf-8")


def _test_processes(root: int) -> list[int]:
    """The test processes (pid 2 of their run's PID namespace) under ``root``."""
    found, parents = [], {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            nspid = next(
                line for line in (entry / "status").read_text().splitlines()
                if line.startswith("NSpid:")
            ).split()[1:]  # fmt: skip
        except (OSError, StopIteration, ValueError):
            continue
        parents[int(entry.name)] = (ppid, nspid)
    for pid, (_, nspid) in parents.items():
        here, seen = pid, 0
        while here in parents and here != root and seen < 50:
            here, seen = parents[here][0], seen + 1
        if here == root and nspid[-1:] == ["2"] and len(nspid) > 1:
            found.append(pid)
    return found


def test_a_test_process_killed_from_outside_is_run_again_not_scored(tmp_path: Path) -> None:
    slow = tmp_path / "solution.py"
    slow.write_text(RIGHT + "\nimport time\ntime.sleep(2)\n", encoding="utf-8")
    q = QUICKSTART
    with Evaluator(q / "tests", heldout=q / "heldout", reference=q / "reference") as ev:
        if not ev.use_namespaces:
            pytest.skip("no PID namespace here to find the test process by")
        ev.prepare()
        killed: list[int] = []

        def kill_one() -> None:
            deadline = time.monotonic() + 10
            while not killed and time.monotonic() < deadline:
                found = _test_processes(os.getpid())
                if found:
                    os.kill(found[0], signal.SIGKILL)
                    killed.append(found[0])
                time.sleep(0.05)

        killer = threading.Thread(target=kill_one)
        killer.start()
        result = ev.score(slow)
        killer.join()
    assert killed, "no test process was found to kill"
    assert result.error is None, result.error
    assert result.signal("pass_rate") == 1.0
    assert len(result.extra["run_again"]) == 1


def test_a_candidate_that_tries_to_kill_its_test_process_cannot_and_gains_nothing(
    tmp_path: Path,
) -> None:
    killer = tmp_path / "solution.py"
    killer.write_text(
        "import os, signal\nfor pid in range(1, 10):\n    try:\n"
        "        if pid != os.getpid():\n            os.kill(pid, signal.SIGKILL)\n"
        "    except OSError:\n        pass\n" + RIGHT,
        encoding="utf-8",
    )
    q = QUICKSTART
    with Evaluator(q / "tests", heldout=q / "heldout", reference=q / "reference") as ev:
        result = ev.score(killer)
    assert result.signal("pass_rate") == 0.0
    assert "signals_processes" in {r.code for r in result.integrity.reasons}
    assert "run_again" not in result.extra
    assert not result.infrastructure
