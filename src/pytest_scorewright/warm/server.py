"""The warm parent's own process (``python -m pytest_scorewright.warm.server``).

Started by :class:`~pytest_scorewright.warm.parent.WarmParent`. It imports pytest, pluggy,
pytest-timeout and the modules the user preloads, never a candidate or a test module, freezes
the garbage collector's view of them, and then serves requests: for each one it forks a job
process that runs :func:`run_sandboxed` (the sandbox and deadline logic) and sends back what
the job observed. Several jobs run at once; this process stays single-threaded.

Repeated ``pytest.main`` in one process is wrong (stale modules, nothing collected): only
forks ever run pytest, and each fork's copy is thrown away.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import json
import os
import selectors
import shutil
import signal
import sys
import time
from collections.abc import Sequence
from typing import Any

from pytest_scorewright.sandbox.channel import FrameReader, encode_frame
from pytest_scorewright.sandbox.launch import run_sandboxed
from pytest_scorewright.sandbox.wire import SandboxSpec, outcome_to_wire, spec_from_wire
from pytest_scorewright.warm.parent import UNLIMITED
from pytest_scorewright.warm.prepared import prepare

#: How long a job may take to end its run once its caller is gone.
_JOB_GRACE_S = 5.0

#: Imported once by the warm parent, so no fork imports them again.
PRELOAD = (
    "pytest",
    "_pytest.python",
    "_pytest.runner",
    "_pytest.skipping",
    "_pytest.subtests",
    "_pytest.unittest",
    "_pytest.assertion.rewrite",
    "pluggy",
    "pytest_timeout",
    "pytest_scorewright.plugin",
    "pytest_scorewright.child.runner",
    "pytest_scorewright.child.processes",
)


def serve(inp: int, out: int) -> None:
    """Serve run requests on ``inp`` until it closes; answer on ``out``."""
    requests = FrameReader(max_frame=UNLIMITED, max_total=UNLIMITED)  # the trusted caller
    sel = selectors.DefaultSelector()
    sel.register(inp, selectors.EVENT_READ, None)
    jobs: dict[int, tuple[int, int, bytearray]] = {}  # fd -> (request id, pid, buffer)
    dirs: dict[int, str] = {}  # fd -> the run's work dir, the caller's to remove
    fixed_roots: set[str] = set()
    while True:
        for key, _ in sel.select():
            fd = int(key.fd)
            if key.data is None:
                data = os.read(inp, 1 << 16)
                if not data:
                    _caller_gone(jobs, dirs, fixed_roots)
                    return
                for request in requests.feed(data):
                    spec = spec_from_wire(request["spec"])
                    read_end, pid = _start_job(spec, (inp, out))
                    jobs[read_end] = (int(request["id"]), pid, bytearray())
                    dirs[read_end] = os.path.dirname(spec.stage_dir)
                    fixed_roots.add(spec.fixed_root)
                    sel.register(read_end, selectors.EVENT_READ, "job")
                continue
            chunk = os.read(fd, 1 << 16)
            request_id, pid, buffer = jobs[fd]
            if chunk:
                buffer += chunk
                continue
            sel.unregister(fd)
            os.close(fd)
            del jobs[fd], dirs[fd]
            os.waitpid(pid, 0)
            answer: dict[str, Any] = {"type": "done", "id": request_id}
            try:
                answer["outcome"] = json.loads(buffer)
            except ValueError:
                answer["error"] = "the job process died without an answer"
            _write_all(out, encode_frame(answer))


def _caller_gone(
    jobs: dict[int, tuple[int, int, bytearray]], dirs: dict[int, str], fixed_roots: set[str]
) -> None:
    """The caller closed its end: it is done, or it was killed. Its runs in flight go (each
    run's PID 1 dies with its job, and the kernel ends its namespace), and so do the
    directories a killed caller could not remove: the runs' work dirs and the fixed roots."""
    # SIGTERM first: a job then ends its run as at a deadline (without namespaces that is
    # the job's sweep of what its supervisor left, which SIGKILL would skip), within a grace.
    pids = {pid for _, pid, _ in jobs.values()}
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + _JOB_GRACE_S
    while pids and time.monotonic() < deadline:
        for pid in list(pids):
            with contextlib.suppress(ChildProcessError):
                if os.waitpid(pid, os.WNOHANG)[0] == 0:
                    continue
            pids.discard(pid)
        time.sleep(0.01)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
    for path in (*dirs.values(), *fixed_roots):
        if path:
            shutil.rmtree(path, ignore_errors=True)


def _start_job(spec: SandboxSpec, close: Sequence[int]) -> tuple[int, int]:
    config = None
    if spec.fixed_root:  # before the fork: parsed once, shared by every later run
        config = prepare(
            spec.pytest_args, spec.plugins, spec.fixed_root, start=not spec.early_conftests
        )
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the job process
        code = 0
        try:
            os.close(read_end)
            null = os.open(os.devnull, os.O_RDWR)
            for fd in close:  # the caller's pipes: not this job's to hold
                os.dup2(null, fd)
            os.close(null)
            outcome = run_sandboxed(spec, config, disposable=True)
            _write_all(write_end, json.dumps(outcome_to_wire(outcome)).encode())
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    os.close(write_end)
    return read_end, pid


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def main(argv: Sequence[str] | None = None) -> int:
    preload = list(argv if argv is not None else sys.argv[1:])
    from _pytest.config import default_plugins

    # pytest imports its ~30 built-in plugins lazily in every session: here, once, instead
    # of in every fork (measured: a 12-test run fell from ~110 ms to ~69 ms).
    builtin = [name if "." in name else f"_pytest.{name}" for name in default_plugins]
    for name in (*PRELOAD, *builtin, *preload):
        importlib.import_module(name)
    # Everything imported so far is shared with every fork; freezing keeps the collector
    # from touching (and so copying) those pages in the children.
    gc.collect()
    gc.freeze()
    sys.dont_write_bytecode = True
    inp, out = sys.stdin.fileno(), sys.stdout.fileno()
    sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - fd 1 carries frames, nothing else
    serve(inp, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
