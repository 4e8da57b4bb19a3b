"""Reading /proc, for the parent's sweep and for a subreaper S (imports nothing of ours)."""

from __future__ import annotations

import contextlib
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

#: Processes of a tree counted at most (a fork bomb's tree is not walked whole).
MAX_TREE = 256


def tree_cpu_s(pid: int) -> float | None:
    """CPU seconds (user and system) of ``pid``, its threads, its children it has waited for,
    and its live descendants; None if ``pid`` is gone or /proc cannot say. A descendant that
    left the tree (a double fork) is not counted."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    todo, seen = [pid], 0
    while todo and seen < MAX_TREE:
        current = todo.pop()
        seen += 1
        used = _cpu_ticks(current)
        if used is None:
            if current == pid:
                return None
            continue
        total += used
        todo += _children(current)
    return total / ticks


def _cpu_ticks(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    # Fields 14-17 of stat (utime, stime, cutime, cstime), counted after the name's ")".
    return sum(int(f) for f in fields[11:15])


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for text in _task_files(pid, "children") or ():
        with contextlib.suppress(ValueError):
            found += [int(c) for c in text.split()]
    return found


def _task_files(pid: int, name: str) -> list[bytes] | None:
    """The file ``name`` of every thread of ``pid`` (/proc/<pid>/task/<tid>/<name>), but a
    thread's that ended meanwhile; None if ``pid`` is gone."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    found = []
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/{name}", "rb") as fh:
                found.append(fh.read())
        except OSError:
            continue
    return found


def waited_s(pid: int) -> float | None:
    """Seconds ``pid``'s main thread has spent runnable but waiting for a CPU (the second
    field of /proc/<pid>/schedstat); None if it is gone or the kernel keeps no such count
    (no CONFIG_SCHED_INFO; gVisor's /proc)."""
    try:
        with open(f"/proc/{pid}/schedstat", "rb") as fh:
            return int(fh.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return None


def threads_waited_s(pid: int) -> float | None:
    """Seconds every thread of ``pid`` has spent runnable but waiting for a CPU, summed (the
    second field of each /proc/<pid>/task/<tid>/schedstat); None as :func:`waited_s`. A
    thread that holds a lock another needs (Python's GIL) makes that one wait while it
    waits for a CPU, and the other's own count shows a sleep."""
    counts = []
    for text in _task_files(pid, "schedstat") or ():
        with contextlib.suppress(IndexError, ValueError):
            counts.append(int(text.split()[1]))
    return sum(counts) / 1e9 if counts else None


def start_ticks(pid: int) -> int | None:
    """When ``pid`` started, in clock ticks since boot (field 22 of its stat); None if it
    is gone. A pid and its start time name one process, even after the pid is reused."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return int(fh.read().rsplit(b")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None
