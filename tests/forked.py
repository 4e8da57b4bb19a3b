"""A body run in a real forked child that writes to a pipe, for tests of what a signal or a
thread does to our messages (an audit hook or a signal handler is never installed in a test
runner's own process)."""

from __future__ import annotations

import os
from collections.abc import Callable


def in_a_fork(
    body: Callable[[int], int],
    *,
    each_read: Callable[[int], None] | None = None,
    size: int = 65536,
) -> tuple[int, bytes]:
    """``body(fd)`` in a forked child, ``fd`` a pipe's writing end; the child's exit status
    (``body``'s answer; 1 if it raised) and all it wrote. ``each_read(pid)`` is called after
    every read of at most ``size`` bytes: a slow reader paces itself there."""
    read, written = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            os.close(read)
            code = body(written)
        finally:
            os._exit(code)
    os.close(written)
    data = b""
    while chunk := os.read(read, size):
        data += chunk
        if each_read is not None:
            each_read(pid)
    os.close(read)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), data
