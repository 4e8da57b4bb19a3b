"""Confinement applied inside the child before any candidate code runs.

In order: file descriptors and signals reset, the inherited environment wiped, then (in the
process that will run pytest) the work directory, an environment built from an allow-list,
rlimits, Landlock, and last the drop to an unprivileged uid.
"""

from __future__ import annotations

import os
import resource
import signal
import sys
import tempfile
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_scorewright.kernel import landlock, linux
from pytest_scorewright.protocol.wire import WorkerPlan

MiB = 1024 * 1024


def reset_process(keep_fds: Sequence[int]) -> None:
    """Default signal handlers (SIGPIPE and SIGXFSZ ignored, as Python starts), empty signal
    mask, stdin from /dev/null, every fd but
    ``keep_fds`` and 0-2 closed, and the inherited environment block wiped."""
    for signum in signal.valid_signals():
        if signum in (signal.SIGKILL, signal.SIGSTOP):
            continue
        try:
            signal.signal(signum, signal.SIG_DFL)
        except (OSError, ValueError):
            continue
    # As a fresh interpreter has them: a write to a closed pipe or socket, or past
    # RLIMIT_FSIZE, raises an OSError instead of killing the process.
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    keep = sorted({0, 1, 2, *keep_fds})
    low = 3
    for fd in keep:
        if fd >= low:
            os.closerange(low, fd)
            low = fd + 1
    os.closerange(low, 1 << 20)
    linux.wipe_initial_environment()
    _rebind_std_streams()


def _rebind_std_streams() -> None:
    # The host may have replaced sys.stdout (pytest's capture, a notebook, a logging shim)
    # with objects whose files were just closed; give the child plain streams on fds 0-2.
    streams = {
        "stdin": open(0, encoding="utf-8", closefd=False),  # noqa: SIM115
        "stdout": open(1, "w", encoding="utf-8", errors="backslashreplace", closefd=False),  # noqa: SIM115
        "stderr": open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False),  # noqa: SIM115
    }
    for name, stream in streams.items():
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)


def confine_worker(plan: WorkerPlan) -> dict[str, Any]:
    """Confine the process that will run pytest; returns what was applied."""
    os.chdir(plan.cwd)
    _set_environment(plan.env)
    limits = plan.limits
    _limit(resource.RLIMIT_CORE, 0)
    _limit(resource.RLIMIT_AS, limits.memory_mb * MiB)
    # Soft below hard: SIGXCPU first (catchable, shows up as a crash), SIGKILL a second later.
    resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 1))
    _limit(resource.RLIMIT_NOFILE, limits.open_files)
    _limit(resource.RLIMIT_FSIZE, limits.file_size_mb * MiB)
    applied: dict[str, Any] = {"uid": plan.uid, "landlock_abi": 0, "nproc": None}
    if plan.nproc_scope:
        # Counted per real uid (per user namespace and uid since Linux 5.14); never for
        # root, which is why root's runs drop to a uid of their own.
        nproc = limits.processes + plan.nproc_slack
        _limit(resource.RLIMIT_NPROC, nproc)
        applied.update(nproc=nproc, nproc_scope=plan.nproc_scope)
    if plan.landlock_policy is not None and plan.landlock_abi > 0:
        done = landlock.restrict_self(plan.landlock_policy, plan.landlock_abi)
        applied.update(landlock_abi=done.abi, landlock_tcp=done.tcp, landlock_scoped=done.scoped)
    else:
        linux.prctl(linux.PR_SET_NO_NEW_PRIVS, 1)
    if plan.uid is not None:
        os.setgroups([])
        os.setgid(plan.uid)
        os.setuid(plan.uid)
    elif plan.drop_caps:
        linux.drop_all_capabilities()
        applied["capabilities"] = "dropped"
    return applied


def _limit(which: int, value: int) -> None:
    # Hard limit too, so the candidate cannot raise it back.
    resource.setrlimit(which, (value, value))


def _set_environment(env: Mapping[str, str]) -> None:
    import posix

    posix.environ.clear()  # the interpreter's own copy of the startup environment
    os.environ.clear()
    os.environ.update(env)
    tempfile.tempdir = None  # forget a temp dir chosen from the parent's environment
