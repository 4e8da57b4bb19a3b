"""Finding and killing every process of a sandbox uid, however it detached from the tree."""

from __future__ import annotations

import os

from pytest_scorewright.kernel.procfs import scan_proc
from pytest_scorewright.kernel.reaper import end_uid


def kill_every_process_of(uid: int, userns: int | None = None) -> None:
    """SIGKILL every process running as ``uid``: a helper takes that uid and kills all it may
    signal (kill -1), which finds descendants however they detached from the tree.
    ``userns``: the file of the user namespace ``uid`` is of (subids.py), joined first."""
    end_uid(uid, rounds=1, userns=userns)


def processes_of(uid: int) -> list[int]:
    """Processes whose real uid is ``uid`` (from /proc/<pid>/status, which is right even for
    non-dumpable processes, whose /proc directory belongs to root)."""
    wanted = str(uid).encode()

    def real_uid(status: bytes) -> bytes:
        line = next((ln for ln in status.splitlines() if ln.startswith(b"Uid:")), b"Uid: -")
        return line.split()[1]

    return scan_proc("status", real_uid, wanted)


def tasks_of(uid: int) -> int:
    """Threads of every process whose real uid is ``uid``: what RLIMIT_NPROC counts."""
    total = 0
    wanted = str(uid).encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status", "rb") as fh:
                lines = fh.read().splitlines()
            fields = dict(line.split(b":", 1) for line in lines if b":" in line)
        except OSError:
            continue
        if fields.get(b"Uid", b"").split()[:1] == [wanted]:
            total += int(fields.get(b"Threads", b"1"))
    return total
