"""The janitor of a caller that forks its runs itself (sandbox/janitor.py), with a real caller
process, a real janitor process and a real kill: what the caller said last before it died is
read, even when the janitor wakes only after the death (a machine at load 8: the death and
the last line are seen at once)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # starts a caller and its janitor

CALLER = """
import os, sys, tempfile
from pytest_scorewright.sandbox.janitor import Janitor
janitor = Janitor()
print(janitor._proc.pid, flush=True)
sys.stdin.readline()  # the janitor is stopped now
root = tempfile.mkdtemp(prefix="scorewright-", dir=sys.argv[1])
janitor.made(root)
print(root, flush=True)
os._exit(0)  # as SIGKILL would: no cleanup of its own
"""


def test_a_janitor_that_wakes_after_its_caller_died_removes_the_last_dir_it_was_told_of(
    tmp_path: Path,
) -> None:
    caller = subprocess.Popen(
        [sys.executable, "-c", CALLER, str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert caller.stdin is not None
    assert caller.stdout is not None
    janitor = int(caller.stdout.readline())
    os.kill(janitor, signal.SIGSTOP)
    try:
        caller.stdin.write("go\n")
        caller.stdin.flush()
        root = Path(caller.stdout.readline().strip())
        assert caller.wait(timeout=30) == 0
        assert root.is_dir()
    finally:
        os.kill(janitor, signal.SIGCONT)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and Path(f"/proc/{janitor}").exists():
        time.sleep(0.05)
    assert not root.exists(), "the janitor ended and left the caller's last work dir"
    caller.stdin.close()
    caller.stdout.close()
