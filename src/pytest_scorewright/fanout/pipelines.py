"""Several trusted pipelines on one machine: the caller's side.

One process can only keep so many runs fed: each candidate costs its caller workspace
copies and removals, the static scan, decoding and the verdict, all in one interpreter
(issue 28's profile of a 16-core machine: the caller at 105% CPU, the machine a third idle).
So ``score_many`` with more than :data:`JOBS_PER_PIPELINE` workers spreads candidates over
pipeline processes (``workers/pipeline_process.py``), each an Evaluator of its own, with its own
warm parent, built from this Evaluator's settings and from what it has learned (the suites'
test ids, the reference's runs, the calibrated limits: ``scoring/prepared.py`` Learned), so
every pipeline scores exactly as this process would, and no reference runs again. Every
piece of every verdict is still decided in trusted processes only; this process relays
paths out and results back.

Identical content goes to the pipeline that scored it first, whose cache answers it as
``score`` would here; new content goes to the least busy pipeline.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import queue
import struct
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from pytest_scorewright.errors import InfrastructureError
from pytest_scorewright.result import ScoreResult
from pytest_scorewright.scoring.candidates import content_key
from pytest_scorewright.scoring.prepared import Learned
from pytest_scorewright.scoring.settings import EvaluatorSettings

#: Candidates at once one pipeline process takes. Measured on a 16-core machine (issue 28):
#: one process scoring J at a time kept 0.92 of linear speed at J=2, 0.77 at 4, 0.45 at 8.
JOBS_PER_PIPELINE = 4
#: How long a closing pipeline has to stop its runs and remove its directories.
_CLOSE_WAIT_S = 15.0
_LENGTH = struct.Struct(">I")

Unscored = Callable[[Path, BaseException], ScoreResult]


def pipeline_sizes(workers: int) -> list[int]:
    """How many candidates each pipeline takes at once, for ``workers`` in all."""
    count = -(-workers // JOBS_PER_PIPELINE)
    return [workers // count + (i < workers % count) for i in range(count)]


def send(stream: IO[bytes], message: object) -> None:
    """One message (both ends are trusted processes of ours: pickle is fine)."""
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_LENGTH.pack(len(data)) + data)
    stream.flush()


def receive(stream: IO[bytes]) -> Any:
    """The next message, or None at the end of the stream."""
    head = stream.read(_LENGTH.size)
    if len(head) < _LENGTH.size:
        return None
    (size,) = _LENGTH.unpack(head)
    data = stream.read(size)
    if len(data) < size:
        return None
    return pickle.loads(data)  # noqa: S301 - written by our own pipeline process


class PipelineProcess:
    """One pipeline process, and the candidates it has in hand (index: path)."""

    def __init__(
        self, number: int, settings: EvaluatorSettings, learned: Learned, jobs: int
    ) -> None:
        self.number = number
        self.jobs = jobs
        self.in_hand: dict[int, Path] = {}
        #: Its process ended, and no replacement could start.
        self.ended = False
        env = dict(os.environ)
        # The caller's own import path: the pipeline must import this very package.
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p and os.path.isdir(p))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pytest_scorewright.workers.pipeline_process"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            close_fds=True,
        )
        assert self.proc.stdin is not None  # noqa: S101 - both made above
        assert self.proc.stdout is not None  # noqa: S101
        self.stdin, self.stdout = self.proc.stdin, self.proc.stdout
        send(self.stdin, (settings, learned, jobs))

    def ready(self) -> None:
        """Wait until the pipeline's Evaluator is built; its failure is raised here."""
        answer = receive(self.stdout)
        if answer is None:
            raise InfrastructureError("a scoring pipeline process died as it started")
        if answer != "ready":
            raise InfrastructureError(f"a scoring pipeline could not start: {answer}")

    def give(self, index: int, path: Path) -> None:
        self.in_hand[index] = path
        send(self.stdin, (index, os.fspath(path)))

    def read_into(self, results: queue.Queue[tuple[PipelineProcess, int | None, str]]) -> None:
        """Put each ``(pipeline, index, result JSON)`` in ``results``; ``(pipeline, None,
        why)`` once the process has ended."""
        why = "the scoring pipeline process ended"
        try:
            while (message := receive(self.stdout)) is not None:
                index, text = message
                results.put((self, index, text))
        except Exception as exc:  # a bug of ours: this pipeline is given up, not the batch
            why = f"the scoring pipeline's answers could not be read ({exc!r})"
        code = self.proc.wait()
        results.put((self, None, f"{why} (exit status {code})"))

    def close(self) -> None:
        """End the pipeline: it stops its runs and removes their directories."""
        with contextlib.suppress(OSError):
            self.stdin.close()
        try:
            self.proc.wait(timeout=_CLOSE_WAIT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class Pipelines:
    """Pipeline processes for ``sizes`` candidates at once each, kept for an Evaluator's life.

    Example::

        pipelines = Pipelines(evaluator.settings, prepared.learned(), pipeline_sizes(16))
        for index, result in pipelines.score_many(paths, unscored):
            ...
        pipelines.close()
    """

    def __init__(self, settings: EvaluatorSettings, learned: Learned, sizes: Sequence[int]) -> None:
        self._settings, self._learned = settings, learned
        self._all: list[PipelineProcess] = []
        self._lock = threading.Lock()  # one batch at a time
        #: What every pipeline's reader thread puts: ``(pipeline, index, result JSON)``, or
        #: ``(pipeline, None, why)`` once its process has ended.
        self.results: queue.Queue[tuple[PipelineProcess, int | None, str]] = queue.Queue()
        try:
            for number, jobs in enumerate(sizes):
                self._all.append(PipelineProcess(number, settings, learned, jobs))
            for pipeline in self._all:
                pipeline.ready()
                self._start_reader(pipeline)
        except BaseException:
            self.close()
            raise

    @property
    def closed(self) -> bool:
        return not self._all

    def _start_reader(self, pipeline: PipelineProcess) -> None:
        threading.Thread(
            target=pipeline.read_into, args=(self.results,), daemon=True, name="scorewright-pipe"
        ).start()

    @property
    def sizes(self) -> list[int]:
        return [p.jobs for p in self._all]

    def score_many(
        self, paths: Sequence[Path], unscored: Unscored
    ) -> Iterator[tuple[int, ScoreResult]]:
        """Each ``(index, result)`` as it comes, exactly once each."""
        with self._lock:
            yield from _Batch(self, paths, unscored).run()

    def _replace(self, dead: PipelineProcess) -> PipelineProcess:
        """A new pipeline where ``dead`` was (its process ended under it)."""
        fresh = PipelineProcess(dead.number, self._settings, self._learned, dead.jobs)
        try:
            fresh.ready()
        except BaseException:
            fresh.close()
            raise
        self._all[dead.number] = fresh
        self._start_reader(fresh)
        return fresh

    def alive(self) -> list[PipelineProcess]:
        """The pipelines whose processes are running (or not yet known to have ended)."""
        return [p for p in self._all if not p.ended]

    def replace(self, dead: PipelineProcess) -> None:
        """``dead``'s process ended: a new one in its place, or none (``ended``) where it
        cannot start; ``dead``'s candidates in hand are the caller's to give out again."""
        dead.in_hand.clear()
        dead.ended = True
        with contextlib.suppress(OSError, InfrastructureError):
            self._replace(dead)

    def close(self) -> None:
        for pipeline in self._all:
            with contextlib.suppress(OSError):
                pipeline.stdin.close()  # all of them at once: each stops its runs
        for pipeline in self._all:
            pipeline.close()
        self._all = []


class _Batch:
    """One ``score_many`` over the pipelines."""

    def __init__(self, owner: Pipelines, paths: Sequence[Path], unscored: Unscored) -> None:
        self.owner = owner
        self.todo = list(enumerate(paths))[::-1]  # popped from the end: in order
        self.unscored = unscored
        self.home: dict[str, int] = {}  # content key: the number of the pipeline that has it
        self.alive = {p.number: p for p in owner._all}
        self.retried: set[int] = set()

    def run(self) -> Iterator[tuple[int, ScoreResult]]:
        try:
            yield from self._fill()
            while any(p.in_hand for p in self.alive.values()):
                pipeline, index, text = self.owner.results.get()
                if index is None:  # the process ended: its candidates get a result saying so
                    yield from self._lost(pipeline, text)
                elif pipeline.in_hand.pop(index, None) is not None:
                    yield index, ScoreResult.from_json(text)
                yield from self._fill()
        finally:
            if any(p.in_hand for p in self.alive.values()):  # abandoned: stop everything
                self.owner.close()

    def _fill(self) -> Iterator[tuple[int, ScoreResult]]:
        """Give out candidates until every pipeline has twice its jobs in hand (with no
        pipeline left, the rest are answered as not scored)."""
        while self.todo:
            index, path = self.todo[-1]
            if not self.alive:
                self.todo.pop()
                yield index, self.unscored(path, InfrastructureError("no scoring pipeline"))
                continue
            key = content_key(path)
            number = self.home.get(key) if key is not None else None
            if number not in self.alive:
                number = min(self.alive.values(), key=lambda p: len(p.in_hand) / p.jobs).number
            pipeline = self.alive[number]
            if len(pipeline.in_hand) >= 2 * pipeline.jobs:
                return
            self.todo.pop()
            if key is not None:
                self.home[key] = number
            with contextlib.suppress(OSError):  # if it died, its reader says so
                pipeline.give(index, path)

    def _lost(self, pipeline: PipelineProcess, why: str) -> Iterator[tuple[int, ScoreResult]]:
        """A pipeline's process ended: what it had in hand is given out again, once (no
        candidate can end it: each runs in a sandbox of its warm parent's); then answered
        as not scored, with why."""
        for index, path in sorted(pipeline.in_hand.items(), reverse=True):
            if index in self.retried:
                yield index, self.unscored(path, InfrastructureError(why))
            else:
                self.retried.add(index)
                self.todo.append((index, path))
        pipeline.in_hand.clear()
        del self.alive[pipeline.number]
        try:
            fresh = self.owner._replace(pipeline)
        except (OSError, InfrastructureError):
            return  # the others go on (or, with none left, the rest are answered)
        self.alive[fresh.number] = fresh


class PipelineCache:
    """An Evaluator's pipeline processes: started on first use, kept for the next batch of
    the same size, replaced for another size."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pipelines: Pipelines | None = None

    def get(
        self, workers: int, settings: EvaluatorSettings, learned: Callable[[], Learned]
    ) -> Pipelines:
        """Pipelines for ``workers`` candidates at once, of ``settings`` (``learned`` is asked
        for only when new ones start)."""
        sizes = pipeline_sizes(workers)
        with self._lock:
            found = self._pipelines
            if found is not None and (found.closed or found.sizes != sizes):
                found.close()
                self._pipelines = None
            if self._pipelines is None:
                self._pipelines = Pipelines(settings, learned(), sizes)
            return self._pipelines

    @property
    def current(self) -> Pipelines | None:
        """The pipelines running now, if any (for tests and benchmarks)."""
        return self._pipelines

    def close(self) -> None:
        with self._lock:
            if self._pipelines is not None:
                self._pipelines.close()
                self._pipelines = None
