"""The first process of an Evaluator's gVisor sandbox (sandbox/gvisor.py), PID 1 inside it:
it starts the warm parent (``python -m pytest_scorewright.warm.server``, the rest of the
command line) on the sandbox's standard input and output, reaps every process that ends
under it (this gVisor lets no other process be a child subreaper, so the runs' orphans come
here), and exits with the warm parent's status once it has ended, which ends the sandbox."""

from __future__ import annotations

import os
import sys


def main(argv: list[str]) -> int:
    server = os.fork()
    if server == 0:  # pragma: no cover - becomes the warm parent
        server_command = [sys.executable, "-m", "pytest_scorewright.warm.server", *argv]
        os.execv(sys.executable, server_command)  # noqa: S606 - our interpreter and module
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:  # pragma: no cover - the server is always ours to reap
            return 1
        if pid == server:
            return os.waitstatus_to_exitcode(status) & 0xFF


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
