"""The warm parent: one single-threaded process that forks every sandboxed run.

The Evaluator starts it once (``python -m pytest_scorewright.warm.server``, warm/server.py)
with an environment built from an allow-list, so no fork ever inherits the caller's secrets,
its memory, or its threads. This module is the caller's side; it imports neither pytest nor
the sandbox code, so that a command line can start the warm parent (:func:`prestart`) while
it is still importing the rest.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING, Protocol

from pytest_scorewright.errors import InfrastructureError, ScorewrightError
from pytest_scorewright.protocol import wire
from pytest_scorewright.protocol.channel import (
    FrameError,
    FrameSplitter,
    decode_frame,
    decode_json,
    encode_frame,
)
from pytest_scorewright.sandbox.owner import owner_env

if TYPE_CHECKING:
    from pytest_scorewright.protocol.wire import ChildOutcome, SandboxSpec

#: The only variables the warm parent gets from the caller.
_PASSED_ENV = ("PATH", "LANG", "LC_ALL", "TZ", "COVERAGE_CORE")
#: Frame limits between the caller and the warm parent: both sides are trusted.
UNLIMITED = 1 << 62


# -- the caller's side --------------------------------------------------------------------


class Wrapper(Protocol):
    """What starts the warm parent inside another sandbox (sandbox/gvisor.py)."""

    def command(self, inner: Sequence[str], env: Mapping[str, str]) -> list[str]:
        """The command that runs the warm parent with arguments ``inner``, in ``env``."""

    def close(self) -> None: ...


class WarmParent:
    """A handle on the warm process; ``submit(spec)`` is thread-safe and returns a future.

    A warm process that dies is started again at the next ``submit``: the runs it was running
    fail with :class:`~pytest_scorewright.errors.InfrastructureError` (once each of them has
    ended: see warm/server.py), and every later run goes to the new process.

    Example::

        warm = WarmParent(preload=["numpy"])
        outcome = warm.submit(spec).result()
        warm.close()
    """

    def __init__(self, preload: Sequence[str] = (), wrapper: Wrapper | None = None) -> None:
        self._preload = tuple(preload)
        self._wrapper = wrapper
        self._lock = threading.Lock()
        self._next = 0
        #: How many times the warm process was started again after it died.
        self.restarts = 0
        spare = _take_spare(self._preload) if wrapper is None else None
        self._server = spare or _Server(self._preload, wrapper)

    @property
    def _proc(self) -> subprocess.Popen[bytes]:
        """The current warm process."""
        return self._server.proc

    def alive(self) -> bool:
        return self._server.proc.poll() is None

    def submit(self, spec: SandboxSpec) -> Future[ChildOutcome]:
        """Start a run; its outcome arrives in the returned future."""
        future: Future[ChildOutcome] = Future()
        with self._lock:
            self._next += 1
            request = {"type": wire.WARM_RUN, "id": self._next, "spec": wire.spec_to_wire(spec)}
            frame = encode_frame(request)
            for attempt in range(2):
                if attempt or self._server.proc.poll() is not None:
                    self._server.retire()
                    self._server = _Server(self._preload, self._wrapper)
                    self.restarts += 1
                try:
                    self._server.send(self._next, future, frame)
                    break
                except OSError:  # it died between poll() and the write
                    if attempt:
                        raise InfrastructureError(
                            "the warm parent process dies as soon as it starts"
                        ) from None
        return future

    def stop(self, future: Future[ChildOutcome]) -> None:
        """Ask the warm process to end the run of ``future`` now (as at its deadline); the
        future still gets the run's outcome once everything of it has ended."""
        with self._lock:
            self._server.stop(future)

    def close(self) -> None:
        """End the warm process, or keep it for the next WarmParent of this process with the
        same preload if it is idle (:func:`release_spares`)."""
        with self._lock:
            if self._wrapper is None and _park(self._server):
                return
            self._server.retire()
            if self._wrapper is not None:
                self._wrapper.close()


class _Server:
    """One warm process, the runs sent to it, and the thread that reads its answers."""

    def __init__(self, preload: Sequence[str], wrapper: Wrapper | None = None) -> None:
        env = _server_env(wrapper is None)
        #: What a later WarmParent must ask for to be served by this process when it is idle.
        self.key = (tuple(preload), tuple(sorted(env.items())))
        self.owner = os.getpid()
        command = [sys.executable, "-m", "pytest_scorewright.warm.server", *preload]
        if wrapper is not None:
            # Inside its own PID namespace no pid of ours is visible: the requests pipe
            # ending is how it learns this process is gone.
            command = wrapper.command(list(preload), env)
        # A session of its own: a SIGKILL of the caller's process group (a job scheduler, a
        # container stop, kill -9 -PGID) must leave it alive to end the runs and remove their
        # work dirs, which it does when this process is gone (warm/server.py).
        self.proc = subprocess.Popen(  # noqa: S603 - our interpreter, our module, no shell
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            close_fds=True,
            start_new_session=True,
        )
        if self.proc.stdin is None or self.proc.stdout is None:  # pragma: no cover
            raise ScorewrightError("could not start the warm parent process")
        self._stdin = self.proc.stdin
        self._lock = threading.Lock()
        self._pending: dict[int, Future[ChildOutcome]] = {}
        self._gone = False  # the reader has seen the end: nothing sent now gets an answer
        self._reader = threading.Thread(
            target=self._read_answers, args=(self.proc.stdout.fileno(),), daemon=True
        )
        self._reader.start()

    def idle(self) -> bool:
        """Alive, in this process's hands, and running nothing."""
        with self._lock:
            busy = self._gone or bool(self._pending)
        return not busy and self.owner == os.getpid() and self.proc.poll() is None

    def send(self, request_id: int, future: Future[ChildOutcome], frame: bytes) -> None:
        with self._lock:
            if self._gone:
                raise BrokenPipeError("the warm parent process has ended")
            self._pending[request_id] = future
        try:
            self._stdin.write(frame)
            self._stdin.flush()
        except OSError:
            with self._lock:
                self._pending.pop(request_id, None)
            raise

    def stop(self, future: Future[ChildOutcome]) -> None:
        with self._lock:
            ids = [i for i, f in self._pending.items() if f is future]
        for request_id in ids:
            with contextlib.suppress(OSError, ValueError):
                self._stdin.write(encode_frame({"type": wire.WARM_STOP, "id": request_id}))
                self._stdin.flush()

    def _read_answers(self, fd: int) -> None:
        try:
            self._read(fd)
        except BaseException:
            # A bug here must not leave runs waiting forever: this process is given up.
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
        finally:
            with self._lock:
                self._gone = True
                pending, self._pending = self._pending, {}
            for future in pending.values():
                if not future.done():
                    future.set_exception(
                        InfrastructureError(
                            "the warm parent process died during this run (scorewright or "
                            "the machine, not the candidate); it is started again for the "
                            "next run"
                        )
                    )

    def _read(self, fd: int) -> None:
        # Both ends are trusted, but the answers carry what runs sent: one that does not
        # decode fails its own run, never the channel.
        reader = FrameSplitter(max_frame=UNLIMITED, max_total=UNLIMITED)
        body_of: int | None = None
        while data := os.read(fd, 1 << 16):
            for body in reader.frames(data):
                if body_of is not None:
                    self._settle(body_of, body)
                    body_of = None
                    continue
                header = decode_frame(body)
                request_id = int(header["id"])
                if header.get("body"):
                    body_of = request_id
                else:
                    self._fail(request_id, str(header.get("error")))

    def _settle(self, request_id: int, body: bytes) -> None:
        try:
            outcome = wire.outcome_from_wire(decode_json(body, max_depth=None))
        except (FrameError, KeyError, TypeError, ValueError) as exc:
            self._fail(request_id, f"the run's answer could not be read: {exc}")
            return
        with self._lock:
            future = self._pending.pop(request_id, None)
        if future is not None:
            future.set_result(outcome)

    def _fail(self, request_id: int, error: str) -> None:
        with self._lock:
            future = self._pending.pop(request_id, None)
        if future is not None:
            future.set_exception(InfrastructureError(error))

    def retire(self) -> None:
        """Close the process's input: it stops its runs and exits (at once if it is dead)."""
        with contextlib.suppress(OSError):
            self._stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        # The process is gone, so the reader sees the end of its output and stops, once the
        # last of its jobs has ended.
        self._reader.join(timeout=10)
        if self.proc.stdout is not None and not self._reader.is_alive():
            self.proc.stdout.close()


def _server_env(watch_owner: bool) -> dict[str, str]:
    env = {k: os.environ[k] for k in _PASSED_ENV if k in os.environ}
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p and os.path.isdir(p))
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # configurations parsed here (prepared.py)
    if watch_owner:
        env.update(owner_env())  # it watches this process, not only the pipe
    return env


#: Idle warm processes of closed WarmParents (Evaluators), one per preload and environment,
#: each kept for the next one this process makes: starting one costs ~0.3 s of CPU (it
#: imports pytest and the sandbox code), which a caller that makes an Evaluator per task
#: (the reward service, verify --dataset, a test suite) would pay every time. The runs a
#: kept process forks are as apart from the last Evaluator's as from each other: it never
#: runs a candidate or a test itself. Each ends with this process (warm/server.py watches
#: it), at exit, or at :func:`release_spares`.
_spares: dict[tuple[object, ...], _Server] = {}
_spares_lock = threading.Lock()


def _park(server: _Server) -> bool:
    """Keep ``server`` for a later WarmParent; False if it cannot be (busy, dead, a fork's
    copy, or one kept for its key already)."""
    if not server.idle():
        return False
    with _spares_lock:
        if server.key in _spares:
            return False
        _spares[server.key] = server
    return True


def _take_spare(preload: Sequence[str]) -> _Server | None:
    key = (tuple(preload), tuple(sorted(_server_env(True).items())))
    with _spares_lock:
        server = _spares.pop(key, None)
    if server is not None and not server.idle():  # it died meanwhile
        if server.owner == os.getpid():
            server.retire()
        return None
    return server


def release_spares() -> None:
    """End the idle warm processes this process kept for later Evaluators (done at exit)."""
    with _spares_lock:
        kept = [server for server in _spares.values() if server.owner == os.getpid()]
        _spares.clear()
    for server in kept:
        server.retire()


def _in_a_fork() -> None:
    # A fork's copies are not its own (their keys name the parent's pid, so none is taken):
    # only the lock, which another thread may have held at the fork, is made again.
    global _spares_lock
    _spares_lock = threading.Lock()


atexit.register(release_spares)
os.register_at_fork(after_in_child=_in_a_fork)


_prestarted: dict[tuple[str, ...], WarmParent] = {}


def prestart(preload: Sequence[str] = ()) -> None:
    """Start a warm parent now, for the next Evaluator this process makes with the same
    ``preload`` (the command line starts one before importing the evaluator: both take
    ~0.2 s, and on two cores they overlap)."""
    key = tuple(preload)
    if key not in _prestarted:
        _prestarted[key] = WarmParent(preload)


def take_prestarted(preload: Sequence[str]) -> WarmParent | None:
    """The warm parent :func:`prestart` started for ``preload``, if any (once)."""
    warm = _prestarted.pop(tuple(preload), None)
    if warm is not None and not warm.alive():  # it died meanwhile
        return None
    return warm
