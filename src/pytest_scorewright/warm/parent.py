"""The warm parent: one single-threaded process that forks every sandboxed run.

The Evaluator starts it once (``python -m pytest_scorewright.warm.server``, warm/server.py)
with an environment built from an allow-list, so no fork ever inherits the caller's secrets,
its memory, or its threads. This module is the caller's side; it imports neither pytest nor
the sandbox code, so that a command line can start the warm parent (:func:`prestart`) while
it is still importing the rest.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
from collections.abc import Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING

from pytest_scorewright.errors import ScorewrightError
from pytest_scorewright.sandbox import wire
from pytest_scorewright.sandbox.channel import FrameReader, encode_frame

if TYPE_CHECKING:
    from pytest_scorewright.sandbox.wire import ChildOutcome, SandboxSpec

#: The only variables the warm parent gets from the caller.
_PASSED_ENV = ("PATH", "LANG", "LC_ALL", "TZ", "COVERAGE_CORE")
#: Frame limits between the caller and the warm parent: both sides are trusted.
UNLIMITED = 1 << 62


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
            [sys.executable, "-m", "pytest_scorewright.warm.server", *preload],
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
            frame = encode_frame({"type": "run", "id": self._next, "spec": wire.spec_to_wire(spec)})
            self._stdin.write(frame)
            self._stdin.flush()
        return future

    def _read_answers(self, fd: int) -> None:
        reader = FrameReader(max_frame=UNLIMITED, max_total=UNLIMITED)
        while True:
            data = os.read(fd, 1 << 16)
            if not data:
                break
            for answer in reader.feed(data):
                with self._lock:
                    future = self._pending.pop(int(answer["id"]))
                if "outcome" in answer:
                    future.set_result(wire.outcome_from_wire(answer["outcome"]))
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
        # The process is gone, so the reader sees the end of its output and stops.
        self._reader.join(timeout=10)
        if self._proc.stdout is not None and not self._reader.is_alive():
            self._proc.stdout.close()


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
    if warm is not None and warm._proc.poll() is not None:  # it died meanwhile
        return None
    return warm
