"""The warm parent: one single-threaded process that forks every sandboxed run.

The Evaluator starts it once (``python -m pytest_scorewright.warm``) with an environment
built from an allow-list, so no fork ever inherits the caller's secrets, its memory, or its
threads. It imports pytest, pluggy, pytest-timeout and the modules the user preloads, never a
candidate or a test module, freezes the garbage collector's view of them, and then serves
requests: for each one it forks a job process that runs :func:`run_sandboxed` (the sandbox
and deadline logic, unchanged) and sends back what the parent observed. Several jobs run at
once; the caller's side is thread-safe, so ``score_many`` simply uses threads.

Repeated ``pytest.main`` in one process is wrong (stale modules, nothing collected): only
forks ever run pytest, and each fork's copy is thrown away.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import importlib
import json
import os
import selectors
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from concurrent.futures import Future
from typing import Any

from pytest_scorewright.channel import FrameReader, encode_frame
from pytest_scorewright.child import Watch
from pytest_scorewright.confine import WorkerPlan
from pytest_scorewright.errors import ScorewrightError
from pytest_scorewright.landlock import Policy
from pytest_scorewright.limits import Limits
from pytest_scorewright.namespaces import Mask
from pytest_scorewright.prepared import prepare
from pytest_scorewright.supervisor import ChildOutcome, SandboxSpec, run_sandboxed

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
    "pytest_scorewright.child",
)

#: The only variables the warm parent gets from the caller.
_PASSED_ENV = ("PATH", "LANG", "LC_ALL", "TZ", "COVERAGE_CORE")
_UNLIMITED = 1 << 62


# -- the wire: specs and outcomes as plain JSON -------------------------------------------


def spec_to_wire(spec: SandboxSpec) -> dict[str, Any]:
    return dataclasses.asdict(spec)


def spec_from_wire(data: dict[str, Any]) -> SandboxSpec:
    worker = dict(data["worker"])
    policy = worker["landlock_policy"]
    worker["limits"] = Limits(**worker["limits"])
    worker["landlock_policy"] = (
        Policy(tuple(policy["readable"]), tuple(policy["writable"]), policy["deny_tcp"])
        if policy
        else None
    )
    watch = data["watch"]
    return SandboxSpec(
        worker=WorkerPlan(**worker),
        pytest_args=tuple(data["pytest_args"]),
        extra_path=tuple(data["extra_path"]),
        isolate_network=data["isolate_network"],
        masks=tuple(Mask(m["directory"], tuple(m["keep"])) for m in data["masks"]),
        stage_dir=data["stage_dir"],
        use_namespaces=data["use_namespaces"],
        watch=Watch(watch["candidate_dir"], watch["tests_dir"], tuple(watch["writable"]))
        if watch
        else None,
        plugins=tuple(data["plugins"]),
        bind_root=data["bind_root"],
        fixed_root=data["fixed_root"],
    )


def outcome_from_wire(data: dict[str, Any]) -> ChildOutcome:
    data = dict(data)
    data["messages"] = [(float(t), m) for t, m in data["messages"]]
    return ChildOutcome(**data)


# -- the server (runs in the warm process) --------------------------------------------------


def serve(inp: int, out: int) -> None:
    """Serve run requests on ``inp`` until it closes; answer on ``out``."""
    requests = FrameReader(max_frame=_UNLIMITED, max_total=_UNLIMITED)  # the trusted caller
    sel = selectors.DefaultSelector()
    sel.register(inp, selectors.EVENT_READ, None)
    jobs: dict[int, tuple[int, int, bytearray]] = {}  # fd -> (request id, pid, buffer)
    while True:
        for key, _ in sel.select():
            fd = int(key.fd)
            if key.data is None:
                data = os.read(inp, 1 << 16)
                if not data:  # the caller is gone: so are its jobs
                    for _, pid, _ in jobs.values():
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(pid, signal.SIGKILL)
                    return
                for request in requests.feed(data):
                    read_end, pid = _start_job(request, (inp, out))
                    jobs[read_end] = (int(request["id"]), pid, bytearray())
                    sel.register(read_end, selectors.EVENT_READ, "job")
                continue
            chunk = os.read(fd, 1 << 16)
            request_id, pid, buffer = jobs[fd]
            if chunk:
                buffer += chunk
                continue
            sel.unregister(fd)
            os.close(fd)
            del jobs[fd]
            os.waitpid(pid, 0)
            answer: dict[str, Any] = {"type": "done", "id": request_id}
            try:
                answer["outcome"] = json.loads(buffer)
            except ValueError:
                answer["error"] = "the job process died without an answer"
            _write_all(out, encode_frame(answer))


def _start_job(request: dict[str, Any], close: Sequence[int]) -> tuple[int, int]:
    spec = spec_from_wire(request["spec"])
    config = None
    if spec.fixed_root:  # before the fork: parsed once, shared by every later run
        config = prepare(spec.pytest_args, spec.plugins, spec.fixed_root)
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
            _write_all(write_end, json.dumps(dataclasses.asdict(outcome)).encode())
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


# -- the caller's side --------------------------------------------------------------------


class WarmParent:
    """A handle on the warm process; ``submit(spec)`` is thread-safe and returns a future.

    Example::

        warm = WarmParent(preload=["numpy"])
        outcome = warm.submit(spec).result()
        warm.close()
    """

    def __init__(self, preload: Sequence[str] = ()) -> None:
        env = {k: os.environ[k] for k in _PASSED_ENV if k in os.environ}
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p and os.path.isdir(p))
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # configurations parsed here (prepared.py)
        self._proc = subprocess.Popen(  # noqa: S603 - our interpreter, our module, no shell
            [sys.executable, "-m", "pytest_scorewright.warm", *preload],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            close_fds=True,
        )
        if self._proc.stdin is None or self._proc.stdout is None:  # pragma: no cover
            raise ScorewrightError("could not start the warm parent process")
        self._stdin = self._proc.stdin
        self._lock = threading.Lock()
        self._pending: dict[int, Future[ChildOutcome]] = {}
        self._next = 0
        self._reader = threading.Thread(
            target=self._read_answers, args=(self._proc.stdout.fileno(),), daemon=True
        )
        self._reader.start()

    def submit(self, spec: SandboxSpec) -> Future[ChildOutcome]:
        """Start a run; its outcome arrives in the returned future."""
        future: Future[ChildOutcome] = Future()
        with self._lock:
            if self._proc.poll() is not None:
                raise ScorewrightError("the warm parent process has exited; create a new one")
            self._next += 1
            self._pending[self._next] = future
            frame = encode_frame({"type": "run", "id": self._next, "spec": spec_to_wire(spec)})
            self._stdin.write(frame)
            self._stdin.flush()
        return future

    def _read_answers(self, fd: int) -> None:
        reader = FrameReader(max_frame=_UNLIMITED, max_total=_UNLIMITED)
        while True:
            data = os.read(fd, 1 << 16)
            if not data:
                break
            for answer in reader.feed(data):
                with self._lock:
                    future = self._pending.pop(int(answer["id"]))
                if "outcome" in answer:
                    future.set_result(outcome_from_wire(answer["outcome"]))
                else:
                    future.set_exception(ScorewrightError(str(answer.get("error"))))
        with self._lock:
            pending, self._pending = self._pending, {}
        for future in pending.values():
            future.set_exception(ScorewrightError("the warm parent process died"))

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._stdin.close()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()


if __name__ == "__main__":
    sys.exit(main())
