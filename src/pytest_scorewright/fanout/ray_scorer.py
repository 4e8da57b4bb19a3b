"""One candidate at a time on a Ray pool, from anywhere in the cluster: for an RL trainer's
rollout workers, which score completions one by one as they come, from Ray tasks and async
actors, without a batch.

A :class:`RayScorer` is a small picklable value (the pool's actor handles, the suite's
ObjectRef, the portable recipe): pass it to a Ray task or actor, and call ``score_source``
there, or ``await ascore_source(...)`` in async code. Each call is one candidate's tries on
the pool's actors, with the batch's rule (fanout/tries.py): a lost try goes again on
another actor (or on its own once Ray has started it again, where it is the only one), at
most ``retries`` more times; a try past ``deadline_s`` is given up; then
an ``ok: false``, ``infrastructure: true`` result says what each try met. Nothing raises
for a candidate but bad arguments.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pytest_scorewright.errors import ConfigError
from pytest_scorewright.fanout.content import Tree
from pytest_scorewright.fanout.dispatch import pack_candidate, remote_deadline_s
from pytest_scorewright.fanout.ray_actor import SharedSuite, import_ray
from pytest_scorewright.fanout.remote import RemoteTask, Reply
from pytest_scorewright.fanout.suite_bundle import pack_suite
from pytest_scorewright.fanout.tries import Tries, named
from pytest_scorewright.limits import Limits
from pytest_scorewright.result import ScoreResult
from pytest_scorewright.scoring.assemble import infrastructure_result
from pytest_scorewright.scoring.candidates import source_file
from pytest_scorewright.scoring.settings import EvaluatorSettings

#: How long a try waits for an actor Ray is starting again before it is sent there: a try
#: sent meanwhile fails at once ("temporarily unavailable: The actor is restarting"), and
#: beside two CPU-bound jobs a one-actor pool spent all three tries so in moments.
BACK_WITHIN_S = 60.0
_PAUSE_S = 0.5


@dataclasses.dataclass(frozen=True)
class RayScorer:
    """Score one candidate at a time on a :class:`~pytest_scorewright.fanout.ray_pool.RayExecutor`'s
    actors; picklable, so Ray tasks and actors can hold it.

    Example::

        scorer = pool.scorer(evaluator)

        @ray.remote
        def rollout(scorer, completion):
            return scorer.score_source(completion).signal("pass_rate")

        result = await scorer.ascore_source(completion)  # in an async actor or trainer
    """

    actors: tuple[Any, ...]
    suite: SharedSuite
    settings: EvaluatorSettings
    module: str
    retries: int
    deadline_s: float

    @classmethod
    def for_evaluator(
        cls, evaluator: Any, pool: Any, *, retries: int = 2, deadline_s: float | None = None
    ) -> RayScorer:
        """A scorer for ``evaluator``'s suite (prepared here: a setup mistake is raised
        once, here, never from every actor) on ``pool``'s actors."""
        if retries < 0:
            raise ConfigError(f"retries must be 0 or more, not {retries}")
        if deadline_s is not None and not deadline_s > 0:
            raise ConfigError(f"deadline_s must be more than 0, not {deadline_s}")
        if not evaluator.settings.portable:
            # As score_many on an executor: an actor loads each objective again by its path.
            raise ConfigError(
                "objectives given as callables cannot go to Ray's actors; give them as "
                "PATH:FUNCTION"
            )
        evaluator.prepare()
        suite, portable = pack_suite(evaluator.settings)
        deadline = deadline_s or remote_deadline_s(portable.limits, portable.repeats)
        return cls(
            tuple(pool.handles), pool.share(suite), portable, evaluator.module, retries, deadline
        )

    @property
    def limits(self) -> Limits:
        return self.settings.limits

    def score(self, candidate: str | Path) -> ScoreResult:
        """Score a candidate file or directory (on this machine) and wait for its result."""
        path = Path(candidate)
        return self._sync(self._pack(path), path)

    def score_source(self, code: str) -> ScoreResult:
        """Score program text (an RL completion) as ``<module>.py`` and wait for it."""
        with self._packed_source(code) as (tree, name):
            return self._sync(tree, name)

    async def ascore(self, candidate: str | Path) -> ScoreResult:
        """:meth:`score`, awaited: the event loop runs on while an actor scores."""
        path = Path(candidate)
        return await self._async(self._pack(path), path)

    async def ascore_source(self, code: str) -> ScoreResult:
        """:meth:`score_source`, awaited."""
        with self._packed_source(code) as (tree, name):
            return await self._async(tree, name)

    # -- tries ---------------------------------------------------------------------------------

    def _sync(self, tree: Tree | ScoreResult, name: Path) -> ScoreResult:
        if isinstance(tree, ScoreResult):
            return tree
        ray = import_ray()
        tries = _Tries(self, name)
        while True:
            actor = tries.next_actor(self.actors)
            if tries.lost_actor:
                _wait_until_back(actor)
            ref = self._send(tree, tries, actor)
            try:
                reply = ray.get(ref, timeout=self.deadline_s)
            except ray.exceptions.GetTimeoutError:
                reply = tries.overdue(ref)
            except Exception as exc:
                reply = exc
            ended = tries.judge(reply)
            if ended is not None:
                return ended

    async def _async(self, tree: Tree | ScoreResult, name: Path) -> ScoreResult:
        if isinstance(tree, ScoreResult):
            return tree
        tries = _Tries(self, name)
        while True:
            actor = tries.next_actor(self.actors)
            if tries.lost_actor:
                await asyncio.to_thread(_wait_until_back, actor)
            ref = self._send(tree, tries, actor)
            answer = asyncio.wrap_future(ref.future())
            try:
                reply = await asyncio.wait_for(answer, self.deadline_s)
            except asyncio.TimeoutError:
                reply = tries.overdue(ref)
            except Exception as exc:
                reply = exc
            ended = tries.judge(reply)
            if ended is not None:
                return ended

    def _send(self, tree: Tree, tries: _Tries, actor: Any) -> Any:
        """One try on ``actor``; the ObjectRef of its answer."""
        tries.last = actor
        tries.sent()
        task = RemoteTask(
            suite=self.suite.digest,
            settings=self.settings,
            candidate=tree,
            token=f"candidate-{uuid.uuid4().hex}",
        )
        return actor.score.remote(task, self.suite)

    def _pack(self, path: Path) -> Tree | ScoreResult:
        """The candidate's files, or its result where they cannot be packed (the caller's
        problem: a missing path, a candidate too large)."""
        try:
            return pack_candidate(path)
        except ConfigError as exc:
            return infrastructure_result(path, str(exc), 0.0, limits=self.limits, ours=False)

    @contextmanager
    def _packed_source(self, code: str) -> Iterator[tuple[Tree | ScoreResult, Path]]:
        with source_file(code, self.module) as path:
            yield self._pack(path), Path(path.name)


class _Tries(Tries):
    """One candidate's tries on the pool's actors (fanout/tries.py's rule), and the actor
    of the last one, which the next avoids."""

    def __init__(self, scorer: RayScorer, name: Path) -> None:
        super().__init__(name, retries=scorer.retries, limits=scorer.limits, on="Ray")
        self.deadline_s = scorer.deadline_s
        self.last: Any = None
        #: Whether the last try was lost with its actor (killed, its node lost).
        self.lost_actor = False

    def next_actor(self, actors: tuple[Any, ...]) -> Any:
        """The actor of the next try: one other than the last one's, where there is one."""
        choices = [a for a in actors if a is not self.last] or list(actors)
        return random.choice(choices)  # noqa: S311 - spreading load, not secrets

    def overdue(self, ref: Any) -> str:
        """A try past its deadline: cancelled where it waits (an actor runs a call to its
        end: other callers' calls may be queued behind it, so the actor is not ended)."""
        import_ray().cancel(ref)
        return f"no answer within {self.deadline_s:g}s"

    def judge(self, reply: Reply | BaseException | str) -> ScoreResult | None:
        """The candidate's result, or None where it goes again: ``reply`` is the actor's
        answer, what the call raised (the actor lost it), or why the try was given up."""
        self.lost_actor = isinstance(reply, import_ray().exceptions.RayActorError)
        if isinstance(reply, str):
            return self.lose(reply)
        if isinstance(reply, BaseException):
            return self.lose(f"the actor lost it ({named(reply)})")
        return self.answer(reply)


def _wait_until_back(actor: Any) -> None:
    """Until ``actor`` answers again, for :data:`BACK_WITHIN_S` at most: Ray starts a
    killed actor again, and a call meanwhile is lost at once. An actor gone for good, or
    still not back, is left to the try itself to find out."""
    ray = import_ray()
    deadline = time.monotonic() + BACK_WITHIN_S
    while (left := deadline - time.monotonic()) > 0:
        try:
            ray.get(actor.where.remote(), timeout=left)
            return
        except ray.exceptions.ActorUnavailableError:
            time.sleep(_PAUSE_S)
        except Exception:  # dead for good, or overdue: the try will say
            return
