"""How many candidates go out, in the caller: one protocol, four strategies.

An Evaluator's ``score_many`` picks one by what it has: an executor's workers (Dask, a
process pool: fanout/dispatch.py), pipeline processes past :data:`JOBS_PER_PIPELINE` at once
(fanout/pipelines.py), threads of this process sharing its warm parent, or one candidate at
a time (no warm parent, or one worker). Whatever the strategy, every candidate yields exactly
one ``(index, result)``, a candidate whose scoring failed for a reason of ours a result with
``infrastructure: true``, and results scored elsewhere are judged here (the judge's key
stays in this process).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from pytest_scorewright.errors import ConfigError
from pytest_scorewright.fanout.dispatch import RemoteBatch, remote_deadline_s
from pytest_scorewright.fanout.pipelines import JOBS_PER_PIPELINE, Pipelines
from pytest_scorewright.fanout.window import bounded
from pytest_scorewright.result import ScoreResult
from pytest_scorewright.scoring.prepared import Prepared
from pytest_scorewright.scoring.settings import EvaluatorSettings

Unscored = Callable[[Path, BaseException], ScoreResult]


class Scorer(Protocol):
    """What the strategies need of the Evaluator that owns them."""

    def score(self, candidate: Path) -> ScoreResult: ...

    def cancel(self, why: str = ...) -> None: ...


def refuse_unportable(executor: Executor | None, portable: bool) -> None:
    """Before anything is prepared: objectives that cannot travel to an executor's workers."""
    if executor is not None and not portable:
        raise ConfigError(
            "objectives given as callables cannot go to an executor's workers; give them "
            "as PATH:FUNCTION"
        )


@dataclass(frozen=True)
class Fanout:
    """One batch's settings: the Evaluator, what it prepared, and how to judge, keep
    pipelines and say why a candidate has no result."""

    owner: Scorer
    ready: Prepared
    settings: EvaluatorSettings
    judge: Callable[[ScoreResult, Path], ScoreResult] | None
    pipelines: Callable[[int], Pipelines]
    unscored: Unscored

    def run(
        self,
        paths: list[Path],
        workers: int,
        executor: Executor | None,
        retries: int,
        deadline_s: float | None,
    ) -> Iterator[tuple[int, ScoreResult]]:
        # One candidate never stops the others: whatever goes wrong with one (its worker
        # lost, a bug of ours) becomes its own result, and the rest are scored.
        if executor is not None:
            yield from self._judged(
                paths, self._remote(paths, workers, executor, retries, deadline_s)
            )
        elif self.ready.runner.warm is None or workers == 1:
            yield from self._one_at_a_time(paths)
        elif workers > JOBS_PER_PIPELINE and self.settings.portable:
            # More than one process keeps fed: pipelines of their own (fanout/pipelines.py).
            yield from self._judged(paths, self.pipelines(workers).score_many(paths, self.unscored))
        else:
            yield from self._threads(paths, workers)

    def _remote(
        self,
        paths: list[Path],
        workers: int,
        executor: Executor,
        retries: int,
        deadline_s: float | None,
    ) -> RemoteBatch:
        return RemoteBatch(
            executor,
            self.settings,
            paths,
            retries=retries,
            deadline_s=deadline_s
            if deadline_s is not None
            else remote_deadline_s(self.ready.limits, self.settings.repeats),
            slots=workers,
            unscored=self.unscored,
        )

    def _threads(self, paths: list[Path], workers: int) -> Iterator[tuple[int, ScoreResult]]:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="scorewright") as pool:
            try:
                yield from bounded(pool, self.owner.score, paths, 2 * workers, failed=self.unscored)
            except KeyboardInterrupt:
                self.owner.cancel("interrupted")  # before the pool waits for its runs
                pool.shutdown(wait=False, cancel_futures=True)
                raise

    def _judged(
        self, paths: Sequence[Path], batch: Iterable[tuple[int, ScoreResult]]
    ) -> Iterator[tuple[int, ScoreResult]]:
        """Results scored elsewhere (pipeline processes, an executor's workers), judged here."""
        for index, result in batch:
            yield index, self.judge(result, paths[index]) if self.judge else result

    def _one_at_a_time(self, paths: Sequence[Path]) -> Iterator[tuple[int, ScoreResult]]:
        for index, path in enumerate(paths):
            try:
                result = self.owner.score(path)
            except Exception as exc:
                result = self.unscored(path, exc)
            yield index, result
