"""Ending every descendant of a child subreaper, without namespaces.

Every process a run starts stays a descendant of the subreaper however it detaches (an
orphan is re-parented to its nearest subreaper ancestor), so the subreaper can find them all
in /proc and kill them. A fork bomb forks while it is being killed: each round kills the whole
tree found by one scan (a killed process forks no more), and the next round finds what was
forked meanwhile, until a scan finds nothing, zombies included: a killed process whose parent
died too is re-parented here, and must be reaped here (an init that does not reap would keep
it for good).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time

from pytest_scorewright.kernel import linux


def end_descendants(within_s: float = 5.0) -> int:
    """SIGKILL and reap every descendant of this process; returns how many were left when
    ``within_s`` ran out (0: none)."""
    me = os.getpid()
    deadline = time.monotonic() + within_s
    while True:
        tree = descendants(me)
        if not tree:
            return 0
        for pid in tree:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        _reap_any()
        if time.monotonic() >= deadline:
            left = descendants(me)
            return len(left)


def end_uid(uid: int, rounds: int = 3, userns: int | None = None) -> None:
    """SIGKILL every process running as ``uid``, however it detached from the tree: a helper
    takes that uid and kills all it may signal (``kill -1``). A few rounds, for a fork bomb
    forking while it is killed. ``userns``: the file of the user namespace ``uid`` is of
    (sandbox/subids.py), joined first. Where no subreaper can be had (inside gVisor) a run's
    uid is its own, so this is everything of the run."""
    for _ in range(rounds):
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the helper
            try:
                if userns is not None:
                    linux.setns(userns, linux.CLONE_NEWUSER)
                os.setgid(uid)
                os.setuid(uid)
                os.kill(-1, signal.SIGKILL)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)


def descendants(root: int) -> list[int]:
    """Every process below ``root`` in the process tree (one scan of /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        # The parent pid is the second field after the ")" that ends the command name.
        fields = stat.rsplit(b")", 1)[1].split()
        children.setdefault(int(fields[1]), []).append(int(entry))
    found, todo = [], list(children.get(root, ()))
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, ()))
    return found


def _reap_any() -> None:
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    time.sleep(0.001)  # let the killed exit and the re-parented arrive
