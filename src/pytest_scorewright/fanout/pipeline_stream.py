"""Single candidates over pipeline processes, from many threads at once: the caller's side
for a service (``scorewright serve``), where requests come one by one, not as a batch.

:class:`~pytest_scorewright.fanout.pipelines.Pipelines` scores a batch at a time; a reward
service has no batch, only request threads that each want one answer. A
:class:`PipelineStream` owns its pipelines: a request gives its candidate to the least busy
one (identical content to the one that scored it first, whose cache answers it), and one
router thread hands each result to the request waiting for it. A pipeline that dies has
what it had in hand given out again, once, on its replacement; a second loss is the
candidate's ``infrastructure: true`` result, never a score.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from concurrent.futures import Future
from pathlib import Path

from pytest_scorewright.errors import InfrastructureError
from pytest_scorewright.fanout.pipelines import PipelineProcess, Pipelines, Unscored
from pytest_scorewright.result import ScoreResult
from pytest_scorewright.scoring.candidates import content_key, source_file
from pytest_scorewright.scoring.prepared import Learned
from pytest_scorewright.scoring.settings import EvaluatorSettings

#: Content keys remembered (the pipeline that scored each): a service runs for weeks, so the
#: oldest are forgotten past this many (a repeat of one then goes to the least busy pipeline,
#: and is scored again there: a cost, 64 bytes a key otherwise kept for ever).
HOMES_KEPT = 65_536


class PipelineStream:
    """Score one candidate per call, from any thread, on pipelines of ``sizes``.

    Example::

        stream = PipelineStream(evaluator.settings, evaluator.learned(), [4, 4], unscored)
        result = stream.score_source(code)  # from each request's thread
        stream.close()
    """

    def __init__(
        self,
        settings: EvaluatorSettings,
        learned: Learned,
        sizes: list[int],
        unscored: Unscored,
    ) -> None:
        self.module = settings.modules[0]
        self._pipelines = Pipelines(settings, learned, sizes)
        self._unscored = unscored
        self._lock = threading.Lock()
        self._numbers = itertools.count()
        self._waiting: dict[int, tuple[Future[ScoreResult], Path]] = {}
        self._retried: set[int] = set()
        #: Candidates given out again after their pipeline died (for operators and tests).
        self.given_again = 0
        self._home: dict[str, int] = {}  # content key: the pipeline that has it
        self._closed = False
        self._router = threading.Thread(target=self._route, name="scorewright-stream", daemon=True)
        self._router.start()

    def score(self, path: Path) -> ScoreResult:
        """Score the candidate at ``path`` (kept until this returns) and wait for it."""
        future: Future[ScoreResult] = Future()
        key = content_key(path)
        with self._lock:
            if self._closed:
                raise InfrastructureError("the scoring pipelines were closed")
            index = next(self._numbers)
            self._waiting[index] = (future, path)
            self._give(index, path, key)
        return future.result()

    def score_source(self, code: str) -> ScoreResult:
        """Score program text as ``<module>.py``."""
        with source_file(code, self.module) as path:
            return self.score(path)

    @property
    def pids(self) -> list[int]:
        """The pipeline processes' ids (for an operator's tools, and tests)."""
        return [p.proc.pid for p in self._pipelines.alive()]

    def close(self) -> None:
        """Stop the pipelines; requests still waiting get a result saying so."""
        with self._lock:
            self._closed = True
            waiting, self._waiting = self._waiting, {}
        self._pipelines.close()
        why = InfrastructureError("the scoring pipelines were closed")
        for future, path in waiting.values():
            future.set_result(self._unscored(path, why))

    # -- under the lock, or in the router -----------------------------------------------------

    def _give(self, index: int, path: Path, key: str | None) -> None:
        alive = self._pipelines.alive()
        if not alive:
            future, _ = self._waiting.pop(index)
            future.set_result(self._unscored(path, InfrastructureError("no scoring pipeline")))
            return
        number = self._home.get(key) if key is not None else None
        found = [p for p in alive if p.number == number]
        pipeline = found[0] if found else min(alive, key=lambda p: len(p.in_hand) / p.jobs)
        if key is not None:
            self._home.pop(key, None)  # to the end: the oldest first out
            self._home[key] = pipeline.number
            if len(self._home) > HOMES_KEPT:
                del self._home[next(iter(self._home))]
        with contextlib.suppress(OSError):  # if it died, its reader says so
            pipeline.give(index, path)

    def _route(self) -> None:
        while True:
            pipeline, index, text = self._pipelines.results.get()
            with self._lock:
                if self._closed:
                    return
                if index is None:
                    self._lost(pipeline, text)
                    continue
                pipeline.in_hand.pop(index, None)
                waiting = self._waiting.pop(index, None)
            if waiting is not None:
                future, path = waiting
                try:
                    future.set_result(ScoreResult.from_json(text))
                except Exception as exc:  # a bug of ours: this request's, not the router's end
                    future.set_result(self._unscored(path, exc))

    def _lost(self, pipeline: PipelineProcess, why: str) -> None:
        """A pipeline's process ended: its candidates go again, once, on its replacement."""
        in_hand = dict(pipeline.in_hand)
        self._pipelines.replace(pipeline)
        for index, path in sorted(in_hand.items()):
            if index not in self._waiting:
                continue
            if index in self._retried:
                future, _ = self._waiting.pop(index)
                future.set_result(self._unscored(path, InfrastructureError(why)))
            else:
                self._retried.add(index)
                self.given_again += 1
                self._give(index, path, None)
