"""The caller a helper process serves, watched directly: the warm parent and the janitor
(both in sessions of their own, so a signal to the caller's process group does not reach
them) end their caller's runs and remove its work dirs when it dies, however it died.

A closed pipe is not enough: a caller that forked (OpenEvolve's worker processes, a
multiprocessing pool) leaves copies of the pipe's write end in its children, which can
outlive it by minutes. So the caller's pid is passed in the environment and watched through
a pidfd (Linux 5.3+), which becomes readable when that process ends; where there is no
pidfd, the parent pid is compared with the caller's (a helper is re-parented when its
caller dies).

A caller that is itself a multiprocessing worker (OpenEvolve's process pool imports the
evaluation file, and so builds the Evaluator, in each worker) serves the process that
started it: a pool worker whose parent died waits on its queue for ever. So that parent is
watched too, and the helper ends its caller's runs when either ends.
"""

from __future__ import annotations

import contextlib
import os

#: The environment variable that names the caller's pid to a helper it starts.
OWNER_ENV = "SCOREWRIGHT_OWNER_PID"
#: ... and the pid of the process that started the caller, where it is a multiprocessing
#: worker.
POOL_OWNER_ENV = "SCOREWRIGHT_POOL_OWNER_PID"


def owner_env() -> dict[str, str]:
    """What a caller adds to a helper's environment: its own pid, and its pool's owner's."""
    import multiprocessing

    env = {OWNER_ENV: str(os.getpid())}
    parent = multiprocessing.parent_process()
    if parent is not None and parent.pid:
        env[POOL_OWNER_ENV] = str(parent.pid)
    return env


def pool_owner_pid() -> int | None:
    """The pid of the process that started the caller as a multiprocessing worker, if so."""
    text = os.environ.get(POOL_OWNER_ENV, "")
    return int(text) if text.isdigit() and int(text) > 1 else None


def owner_pid() -> int | None:
    """The caller's pid, as it named it; None if it named none (or nothing sensible)."""
    text = os.environ.get(OWNER_ENV, "")
    return int(text) if text.isdigit() and int(text) > 1 else None


def watch(pid: int | None) -> int | None:
    """A pidfd that becomes readable when ``pid`` ends; None where there is none to be had
    (no pid, no pidfd_open: then :func:`gone` compares parent pids)."""
    if pid is None or not hasattr(os, "pidfd_open"):
        return None
    try:
        return os.pidfd_open(pid)
    except ProcessLookupError:
        return -1  # already gone
    except OSError:
        return None


def gone(pid: int | None, pidfd: int | None) -> bool:
    """Whether the caller has ended (``pidfd`` from :func:`watch`)."""
    if pid is None:
        return False
    if pidfd == -1:
        return True
    if pidfd is not None:
        import select

        with contextlib.suppress(OSError):
            readable, _, _ = select.select([pidfd], [], [], 0)
            return bool(readable)
        return False
    return os.getppid() != pid
