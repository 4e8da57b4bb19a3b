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
