"""Reading /proc, for the parent's sweep and for a subreaper S (imports nothing of ours)."""

from __future__ import annotations

import os
from collections.abc import Callable


def scan_proc(name: str, field: Callable[[bytes], bytes], wanted: bytes) -> list[int]:
    """Pids whose /proc/<pid>/<name> yields ``wanted`` through ``field``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/{name}", "rb") as fh:
                value = field(fh.read())
        except (OSError, IndexError):
            continue
        if value == wanted:
            found.append(int(entry))
    return found


# -- the child side ------------------------------------------------------------------------


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
