"""The work dirs of a caller that died mid-run, removed when it forks its runs itself.

With the warm parent (the default), the warm parent removes the work dirs of runs whose caller
died. With ``warm=False`` the caller forks each run itself, and a caller stopped by SIGKILL,
or by SIGTERM's default action (no Python cleanup runs), would leave its runs' work dirs
behind: copies of the candidate and of the tests, held-out tests included. So such a caller
keeps a janitor: a small process started when the Evaluator is prepared, in a session of its
own (a terminal's Ctrl-C or a process group's SIGTERM does not reach it), told of each work
dir as it is made and as it is removed. When its stdin closes (the caller ended, however),
it removes those still there as the caller would have (sandbox/workspace.py), then exits.

It removes only what it was told of, and only a directory named ``scorewright-*`` that its
own uid owns (never through a link): the pipe is close-on-exec, but a line written by anyone
else could name nothing else.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from pytest_scorewright.sandbox import owner
from pytest_scorewright.sandbox.owner import owner_env
from pytest_scorewright.sandbox.workspace import remove_work_dir

#: How long the removal is tried, a little apart: a run's last process may still be writing
#: into its work dir after the caller died (a moment quiet; seconds on a machine at load 8).
_TRY_FOR_S = 30.0
_PAUSE_S = 0.2


class Janitor:
    """The caller's side: say what was made and what was removed."""

    def __init__(self) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "pytest_scorewright.sandbox.janitor"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            env={**os.environ, **owner_env()},
        )

    def made(self, root: Path, uid: int | None = None) -> None:
        self._say({"made": str(root), "uid": uid})

    def removed(self, root: Path) -> None:
        self._say({"removed": str(root)})

    def close(self) -> None:
        """Everything this caller made is gone: the janitor finds nothing left, and ends."""
        if self._proc.stdin is not None:
            with contextlib.suppress(OSError):
                self._proc.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(timeout=5)

    def _say(self, message: dict[str, object]) -> None:
        if self._proc.stdin is None:
            return
        with contextlib.suppress(OSError, ValueError):  # a janitor gone: nothing to tell
            self._proc.stdin.write((json.dumps(message) + "\n").encode())
            self._proc.stdin.flush()


def _removable(path: str) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return (
        os.path.basename(path).startswith("scorewright-")
        and stat.S_ISDIR(st.st_mode)
        and st.st_uid == os.geteuid()
    )


def _remove(left: dict[str, int | None]) -> None:
    until = time.monotonic() + _TRY_FOR_S
    while True:
        for path, uid in list(left.items()):
            if _removable(path):
                remove_work_dir(Path(path), uid)
            if not os.path.lexists(path):
                del left[path]
        if not left or time.monotonic() > until:
            return
        time.sleep(_PAUSE_S)


def main() -> int:
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)  # it ends when the caller has: at EOF
    left: dict[str, int | None] = {}
    for line in _lines_while_the_caller_lives():
        try:
            message = json.loads(line)
            if "made" in message:
                uid = message.get("uid")
                left[str(message["made"])] = uid if isinstance(uid, int) else None
            else:
                left.pop(str(message["removed"]), None)
        except (ValueError, KeyError, TypeError):
            continue  # not a line of the caller's
    _remove(left)
    return 0


def _lines_while_the_caller_lives() -> Iterator[bytes]:
    """The caller's lines, until its pipe ends or the caller itself does (a process it
    forked may hold the pipe open long after: sandbox/owner.py)."""
    caller = owner.owner_pid()
    pidfd = owner.watch(caller)
    pool = owner.watch(owner.pool_owner_pid())  # the caller's pool's owner, if any
    owners = [fd for fd in (pidfd, pool) if fd is not None and fd >= 0]
    stdin = sys.stdin.fileno()
    buffered = b""
    while not owner.gone(caller, pidfd) and pool != -1:
        readable, _, _ = select.select([stdin, *owners], [], [], 1.0)
        if any(fd in readable for fd in owners):
            break
        if stdin in readable:
            chunk = os.read(stdin, 1 << 16)
            if not chunk:
                return
            buffered += chunk
            *lines, buffered = buffered.split(b"\n")
            yield from lines
    # The caller is gone, but what it said last may still be in the pipe (a janitor slow to
    # be scheduled sees the death and the last line at once): a work dir made just before
    # the kill is among them, and must be removed too.
    while select.select([stdin], [], [], 0)[0]:
        chunk = os.read(stdin, 1 << 16)
        if not chunk:
            break
        buffered += chunk
    yield from buffered.split(b"\n")


if __name__ == "__main__":
    sys.exit(main())
