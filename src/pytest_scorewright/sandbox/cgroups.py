"""A delegated cgroup v2 subtree, for runs without namespaces.

Where the cgroup this process is in sits in a subtree delegated to the caller (a systemd user
session's ``user@UID.service``, a ``systemd-run --user -p Delegate=yes`` scope: the directory
above this process's cgroup, and its ``cgroup.procs``, belong to the caller), each run
without namespaces gets a cgroup of its own below it::

    <the directory above this process's cgroup>/scorewright-<pid>/run-<n>

S moves itself into it before it forks W, so every process of the run is in it, however it
detaches. When the run ends the trusted parent writes ``cgroup.kill`` (Linux >= 5.14), which
kills every process in it at once, and removes it. Where the ``pids`` controller is enabled
for the subtree, ``pids.max`` bounds the run's processes (limits.processes, plus S).

A run cannot leave its cgroup only because Landlock keeps it from writing any cgroup file
(``/sys`` is not among what it may open): without Landlock its processes, of the caller's
uid, could move themselves out, so the guarantees count the cgroup only with Landlock
(sandbox/guarantees.py). With namespaces a run does not use one: PID-namespace teardown ends
it, and RLIMIT_NPROC of its own uid or user namespace bounds it.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import time
from dataclasses import dataclass

#: How long the kernel gets to empty a killed cgroup.
_EMPTY_WITHIN_S = 2.0


class Unavailable(RuntimeError):
    """No delegated cgroup can be used here (the message says why)."""


@dataclass(frozen=True)
class Delegation:
    """The delegated directory runs' cgroups go below, and whether ``pids`` is enabled."""

    parent: str
    pids: bool


def find() -> Delegation:
    """The delegated subtree above this process's cgroup; Unavailable says why not."""
    if os.environ.get("SCOREWRIGHT_CGROUP", "") == "0":
        raise Unavailable("SCOREWRIGHT_CGROUP=0")
    mount = _v2_mount()
    own = _own_cgroup()
    if own == "/":
        raise Unavailable("this process is in the root cgroup: nothing is delegated above it")
    parent = os.path.join(mount, os.path.dirname(own).lstrip("/"))
    st = os.stat(parent)
    procs = os.path.join(parent, "cgroup.procs")
    if st.st_uid != os.geteuid() or not os.access(parent, os.W_OK | os.X_OK):
        raise Unavailable(f"{parent} (above this process's cgroup) is not delegated to it")
    if not os.access(procs, os.W_OK):
        raise Unavailable(f"{procs} is not writable: no process can be moved below it")
    if not os.path.exists(os.path.join(mount, own.lstrip("/"), "cgroup.kill")):
        raise Unavailable("no cgroup.kill (Linux < 5.14)")
    return Delegation(parent, "pids" in _words(os.path.join(parent, "cgroup.subtree_control")))


def _v2_mount() -> str:
    with open("/proc/self/mountinfo", encoding="utf-8") as fh:
        for line in fh:
            before, _, after = line.partition(" - ")
            if after.split()[:1] == ["cgroup2"]:
                return before.split()[4]
    raise Unavailable("no cgroup v2 file system is mounted")


def _own_cgroup() -> str:
    with open("/proc/self/cgroup", encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("0::"):
                return line[3:].strip()
    raise Unavailable("this process has no cgroup v2 membership")


def _words(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read().split()
    except OSError:
        return []


class Home:
    """This process's directory of run cgroups (``scorewright-<pid>``). It exists while a run
    of it does: the last run to end removes it, the next makes it again."""

    def __init__(self, delegation: Delegation) -> None:
        self.path = os.path.join(delegation.parent, f"scorewright-{os.getpid()}")
        self.wants_pids = delegation.pids
        self.pids = False
        self._serial = itertools.count()

    def new_run(self, processes: int) -> str:
        """A cgroup for one run, bounded to ``processes`` where ``pids`` is enabled. Named
        by the calling process too: jobs forked from one warm parent share a counter's
        value, not the counter."""
        path = os.path.join(self.path, f"run-{os.getpid()}-{next(self._serial)}")
        for _ in range(3):  # the last run of another job may remove the directory meanwhile
            self._make()
            try:
                os.mkdir(path)
                break
            except FileNotFoundError:
                continue
        else:
            raise Unavailable(f"{self.path} kept disappearing")
        if self.pids:
            _write(os.path.join(path, "pids.max"), str(processes))
        return path

    def _make(self) -> None:
        with contextlib.suppress(FileExistsError):
            os.mkdir(self.path)
        if self.wants_pids:
            try:  # idempotent; refused only where pids is not delegated after all
                _write(os.path.join(self.path, "cgroup.subtree_control"), "+pids")
                self.pids = True
            except OSError:
                self.pids = False


_home: Home | None = None


def home(delegation: Delegation | None = None) -> Home:
    """This process's Home, made on first use from ``delegation`` (or the one found); a
    forked job uses its parent's."""
    global _home
    if _home is None:
        _home = Home(delegation or find())
    return _home


def end(path: str) -> int:
    """Kill every process in the cgroup ``path``, wait until it is empty, remove it; how
    many processes were still in it when the wait ran out (0: none)."""
    with contextlib.suppress(OSError):
        _write(os.path.join(path, "cgroup.kill"), "1")
    deadline = time.monotonic() + _EMPTY_WITHIN_S
    while "populated 1" in _read(os.path.join(path, "cgroup.events")):
        if time.monotonic() >= deadline:
            return len(_read(os.path.join(path, "cgroup.procs")).split())
        time.sleep(0.002)
    _rmdir(path)
    _rmdir(os.path.dirname(path))  # the home, if this was its last run
    return 0


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except OSError:
        return ""


def _write(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def _rmdir(path: str) -> None:
    # A cgroup directory is removed with rmdir (its files are not files to delete).
    with contextlib.suppress(OSError):
        os.rmdir(path)
