"""What this machine's kernel lets the sandbox use, probed once per process."""

from __future__ import annotations

import contextlib
import functools
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass

from pytest_scorewright.kernel import landlock, linux
from pytest_scorewright.kernel.namespaces import MappingFailed, try_unshare
from pytest_scorewright.sandbox import cgroups, subids, uids


@dataclass(frozen=True)
class Features:
    #: New PID + mount (+ user, when not root) namespaces can be entered and mounted in
    #: (None), or the reason they cannot.
    namespaces_unavailable: str | None
    landlock_abi: int
    root: bool
    #: Linux >= 5.14 counts RLIMIT_NPROC per user namespace and uid: a user namespace of a
    #: run's own then bounds that run's processes even with the caller's uid mapped.
    nproc_per_user_namespace: bool = False
    #: Not root, with namespaces: the caller's subordinate ids, mapped into a user namespace
    #: every run joins (sandbox/subids.py), so that each run has a uid of its own; None when
    #: they cannot be used, and ``subordinate_unavailable`` says why.
    subordinate: subids.SubIds | None = None
    subordinate_unavailable: str | None = None
    #: Root: the uids (first, how many) its runs take theirs from (uids.py), or None where
    #: its user namespace maps no other, and ``root_uids_unavailable`` says so.
    root_uids: tuple[int, int] | None = None
    root_uids_unavailable: str | None = None
    #: A delegated cgroup v2 subtree for runs without namespaces (cgroups.py), or None.
    cgroup: cgroups.Delegation | None = None

    @property
    def user_namespace(self) -> bool:
        """Runs enter a user namespace first (not root: one is needed to enter the rest)."""
        return not self.root


@functools.cache
def probe() -> Features:
    root = os.geteuid() == 0
    namespaces_unavailable = _probe_namespaces(root)
    ids: subids.SubIds | None = None
    why_not_ids: str | None = None
    if not root and namespaces_unavailable is None:
        try:
            ids = _probe_subordinate_ids()
        except (subids.Unavailable, OSError) as exc:
            why_not_ids = str(exc)
    found = _root_uids() if root else None
    delegation: cgroups.Delegation | None = None
    with contextlib.suppress(cgroups.Unavailable, OSError):  # none: the run's facts say so
        delegation = cgroups.find()
    return Features(
        namespaces_unavailable=namespaces_unavailable,
        landlock_abi=landlock.abi_version(),
        root=root,
        nproc_per_user_namespace=kernel_at_least(5, 14),
        subordinate=ids,
        subordinate_unavailable=why_not_ids,
        root_uids=found if isinstance(found, tuple) else None,
        root_uids_unavailable=found if isinstance(found, str) else None,
        cgroup=delegation,
    )


def _root_uids() -> tuple[int, int] | str:
    try:
        with open("/proc/self/uid_map") as u, open("/proc/self/gid_map") as g:
            return uids.root_range(u.read(), g.read())
    except OSError:  # no user namespaces in this kernel: every id is the host's
        return uids.UID_BASE, uids.ROOT_SPAN


def _probe_subordinate_ids() -> subids.SubIds:
    """The caller's subordinate ids, once a run's steps have worked with them: the keeper
    mapped (it then stays, for this process's runs), and, in a throwaway child, joining its
    namespace, entering the rest and mounting as a run's PID 1 does."""
    if os.environ.get("SCOREWRIGHT_SUBORDINATE_IDS", "") == "0":
        raise subids.Unavailable("SCOREWRIGHT_SUBORDINATE_IDS=0")
    ids = subids.find()
    keeper = subids.keeper(ids)
    if _threads() > 1:
        return ids  # never fork a multi-threaded process: the mapping is the test
    why = _in_child(lambda: _try_namespaces(False, shared=keeper.fd))
    if why:
        raise subids.Unavailable(f"in the mapped user namespace: {why}")
    return ids


def kernel_at_least(major: int, minor: int) -> bool:
    release = os.uname().release.split("-")[0].split(".")
    try:
        return (int(release[0]), int(release[1])) >= (major, minor)
    except (IndexError, ValueError):
        return False


def _probe_namespaces(root: bool) -> str | None:
    # In a throwaway child: the answer depends on privileges, seccomp, AppArmor and sysctls
    # (an AppArmor policy may allow a user namespace and refuse every mount in it).
    if _threads() > 1:
        # Never fork a multi-threaded process (a Dask worker, say): ask a fresh interpreter.
        done = subprocess.run(
            [sys.executable, "-m", "pytest_scorewright.sandbox.host"],
            capture_output=True,
            text=True,
            check=False,
        )
        return done.stdout.strip() or None
    return _in_child(lambda: _try_namespaces(root))


def _in_child(probe: Callable[[], str | None]) -> str | None:
    """``probe()``'s answer, run in a forked child (which it may leave changed)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the probe child
        try:
            why = probe()
        except BaseException as exc:
            why = f"probe: {exc}"
        os.write(write_end, (why or "").encode()[:200])
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as fh:
        answer = fh.read().decode(errors="replace")
    os.waitpid(pid, 0)
    return answer or None


def _try_namespaces(root: bool, shared: int | None = None) -> str | None:
    """Enter the namespaces as a run does (joining the user namespace ``shared``, if given)
    and mount as its PID 1 does; why not, or None."""
    try:
        why = try_unshare(isolate_network=True, user=not root, shared=shared)
    except MappingFailed as exc:
        return str(exc)
    if why is not None:
        return why
    # In a child, PID 1 of the new PID namespace: only it can mount a /proc for it.
    return _in_child(_mount_as_pid_one)


def _mount_as_pid_one() -> str | None:
    try:
        linux.mount(None, "/", None, linux.MS_REC | linux.MS_PRIVATE, None)
        linux.mount("proc", "/proc", "proc", linux.MS_NOSUID | linux.MS_NODEV, None)
        linux.mount("tmpfs", "/dev", "tmpfs", linux.MS_NOSUID, "size=1m")
    except OSError as exc:
        return f"mount in the new namespaces: {exc.strerror}"
    return None


def _threads() -> int:
    """The process's threads, as the kernel counts them: threads that ``threading`` does not
    know of (started by C code) make a fork just as unsafe."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()


if __name__ == "__main__":
    print(_try_namespaces(os.geteuid() == 0) or "")
