"""What this machine's kernel lets the sandbox use, probed once per process."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import threading
from dataclasses import dataclass

from pytest_scorewright.child import landlock
from pytest_scorewright.child.namespaces import try_unshare


@dataclass(frozen=True)
class Features:
    #: New PID + mount namespaces can be entered (None), or the reason they cannot.
    namespaces_unavailable: str | None
    landlock_abi: int
    root: bool


@functools.cache
def probe() -> Features:
    return Features(
        namespaces_unavailable=_probe_namespaces(),
        landlock_abi=landlock.abi_version(),
        root=os.geteuid() == 0,
    )


def _probe_namespaces() -> str | None:
    # unshare in a throwaway child: the answer depends on privileges, seccomp and AppArmor.
    if _threads() > 1:
        # Never fork a multi-threaded process (a Dask worker, say): ask a fresh interpreter.
        done = subprocess.run(
            [sys.executable, "-m", "pytest_scorewright.sandbox.features"],
            capture_output=True,
            text=True,
            check=False,
        )
        return done.stdout.strip() or None
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the probe child
        why = try_unshare(isolate_network=True)
        os.write(write_end, (why or "").encode()[:200])
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as fh:
        answer = fh.read().decode(errors="replace")
    os.waitpid(pid, 0)
    return answer or None


def _threads() -> int:
    """The process's threads, as the kernel counts them: threads that ``threading`` does not
    know of (started by C code) make a fork just as unsafe."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()


if __name__ == "__main__":
    print(try_unshare(isolate_network=True) or "")
