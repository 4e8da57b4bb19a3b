"""Where ``scorewright serve`` scores its candidates when not in its own process: pipeline
processes on this machine, or a Ray cluster's actors. Each gives a scorer per task with
``score_source``, as a task's prepared Evaluator does; a candidate that could not be scored
for a reason of ours comes back ``infrastructure: true`` (the service answers
``reward: null``), never as a score.
"""

from __future__ import annotations

import functools
import threading
from typing import Any, Protocol

from pytest_scorewright.fanout.pipeline_stream import PipelineStream
from pytest_scorewright.fanout.pipelines import pipeline_sizes
from pytest_scorewright.scoring.assemble import unscored_result
from pytest_scorewright.task_dirs import TaskDirs


class Scoring(Protocol):
    """Somewhere other than this process that scores a task's candidates."""

    def scorer(self, tasks: TaskDirs, task: str) -> Any: ...

    def close(self) -> None: ...


class PipelineScoring:
    """Scoring on pipeline processes (``serve --in-flight N`` past what one process keeps
    fed): this process takes requests and relays, as ``score_many`` does past four workers.
    Each task gets pipelines for ``slots`` candidates at once, started when it is first
    asked for, from its prepared Evaluator's settings and what it learned (no reference
    runs again); the service's admission still bounds the candidates in flight overall."""

    def __init__(self, slots: int) -> None:
        self.sizes = pipeline_sizes(slots)
        self._streams: dict[str, PipelineStream] = {}
        self._lock = threading.Lock()

    def scorer(self, tasks: TaskDirs, task: str) -> PipelineStream:
        evaluator = tasks.evaluator(task)  # a bad task name: a ConfigError, nothing started
        with self._lock:
            found = self._streams.get(task)
            if found is None:
                unscored = functools.partial(unscored_result, limits=evaluator.limits)
                found = PipelineStream(
                    evaluator.settings, evaluator.learned(), self.sizes, unscored
                )
                self._streams[task] = found
            return found

    def close(self) -> None:
        with self._lock:
            streams, self._streams = list(self._streams.values()), {}
        for stream in streams:
            stream.close()


class RayScoring:
    """Scoring on a Ray pool (``scorewright serve --ray ADDRESS``): one scorer per task on
    ``actors`` actors, each building the task's Evaluator once; a lost actor's candidate is
    tried again on a restarted one (fanout/ray_scorer.py), and one never answered is a
    failure of ours (``reward: null``), never a 0.0."""

    def __init__(self, address: str | None, actors: int, cpus: float) -> None:
        from pytest_scorewright.fanout.ray_actor import import_ray
        from pytest_scorewright.fanout.ray_pool import RayExecutor

        ray = import_ray()
        if not ray.is_initialized():
            ray.init(address=address, log_to_driver=False)
        self.pool = RayExecutor(actors, num_cpus=cpus)
        self._scorers: dict[str, Any] = {}
        self._lock = threading.Lock()

    def scorer(self, tasks: TaskDirs, task: str) -> Any:
        with self._lock:
            found = self._scorers.get(task)
            if found is None:
                found = self._scorers[task] = self.pool.scorer(tasks.evaluator(task))
            return found

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)
