"""The verifiers adapters: a completion's code, scored in the sandbox, as a verifiers reward.

verifiers 0.3 and later (``verifiers.v1``): rewards are ``@vf.reward(weight, priority)``
methods of a task. Mix the scorer's rewards into your task::

    import verifiers.v1 as vf
    from pytest_scorewright import Evaluator
    from pytest_scorewright.verifiers import Scorer

    scorer = Scorer(Evaluator("tests/", heldout="heldout/", reference="ref/"), weight=1.0)

    class CodeTask(scorer.rewards(), vf.Task):
        pass

The task gets an async ``@vf.reward`` named ``scorewright`` (the fitness, weighted) and an
async ``@vf.metric`` named ``scorewright_signals`` whose keyed scores (pass rates, flags) are
recorded on the trace, not summed: verifiers gives every key of a keyed reward the reward's
weight and adds them all into ``trace.reward``. The run is scored once per trace.

An error of ours or the machine's (the warm parent died, the sandbox could not start) raises
``verifiers.v1.SandboxError`` with a message starting ``scorewright:``: verifiers records it on
the trace (``trace.ok`` false, rewards left unscored, never 0.0) and retries the rollout when
the agent's ``retries`` has a rule for it. A fitness function that fails raises too. A
completion's own failure (no code, a crash, a hang, wrong answers) is a low score.

verifiers before 0.3 (``vf.Rubric``): :func:`verifiers_reward`.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, MutableMapping
from pathlib import Path
from typing import Any

from pytest_scorewright.errors import InfrastructureError, ScorewrightError
from pytest_scorewright.evaluator import Evaluator
from pytest_scorewright.fitness import Fitness, FitnessOutcome
from pytest_scorewright.result import ScoreResult
from pytest_scorewright.sandbox.workspace import private_tempdir

_CODE_BLOCK = re.compile(r"```(?:python|py)?\s*\n(.*?)```", re.S)
#: Every error this adapter raises for a reason of ours starts so (a retry rule can match it).
INFRASTRUCTURE_PREFIX = "scorewright: not scored, for a reason of ours or the machine's"
#: Signals recorded as keyed metrics, when measured (an unmeasured signal is left out), with
#: every objective_<name>.
SIGNALS = (
    "pass_rate",
    "visible_pass_rate",
    "heldout_pass_rate",
    "heldout_divergence",
    "line_coverage",
    "duration_s",
    "speedup",
    "bench_median_s",
)
# Traces scored by the metric and not yet read by the reward; a bound, should a task's
# configuration drop the reward and leave only the metric.
_PENDING_LIMIT = 1024


def extract_code(completion: Any) -> str:
    """The last fenced code block of a completion (a string, or chat messages), else all."""
    if isinstance(completion, list):
        texts = [m.get("content", "") for m in completion if isinstance(m, dict)]
        completion = texts[-1] if texts else ""
    text = str(completion or "")
    blocks = _CODE_BLOCK.findall(text)
    return blocks[-1] if blocks else text


def _last_reply(trace: Any) -> str:
    return extract_code(str(trace.last_reply))


class Scorer:
    """Scores the code in a verifiers trace, once per trace, for a task's reward and metric."""

    def __init__(
        self,
        evaluator: Evaluator,
        fitness: Fitness | None = None,
        *,
        weight: float = 1.0,
        priority: int = 0,
        code: Callable[[Any], str] = _last_reply,
    ) -> None:
        self.evaluator = evaluator
        self.fitness = fitness or Fitness()
        self.weight = weight
        self.priority = priority
        self.code = code
        self._pending: dict[str, asyncio.Future[ScoreResult]] = {}

    async def result(self, trace: Any) -> ScoreResult:
        """The trace's ScoreResult: scored in a worker thread (the event loop goes on with
        other rollouts), shared by the metric and the reward of the same trace."""
        key = str(trace.id)
        future = self._pending.get(key)
        if future is None or future.get_loop() is not asyncio.get_running_loop():
            code = self.code(trace)
            future = asyncio.ensure_future(asyncio.to_thread(self.score_code, code))
            self._pending[key] = future
            while len(self._pending) > _PENDING_LIMIT:
                self._pending.pop(next(iter(self._pending)))
        return await future

    def score_code(self, code: str) -> ScoreResult:
        with private_tempdir("scorewright-completion-") as tmp:
            path = Path(tmp) / f"{self.evaluator.module}.py"
            path.write_text(code, encoding="utf-8")
            return self.evaluator.score(path)

    async def reward(self, trace: Any) -> float:
        """The fitness of the trace's code (the weighted reward)."""
        try:
            result = await self.result(trace)
        finally:
            self._pending.pop(str(trace.id), None)
        return _v1_judged(result, self.fitness)[1]

    async def signals(self, trace: Any) -> dict[str, float]:
        """Keyed scores for the trace: the measured pass rates and the integrity flags."""
        result = await self.result(trace)
        outcome, _ = _v1_judged(result, self.fitness)
        return keyed_scores(result, outcome)

    def rewards(self) -> type:
        """A mixin class for a ``verifiers.v1`` task: the ``scorewright`` reward and the
        ``scorewright_signals`` metric, decorated by verifiers itself."""
        import verifiers.v1 as vf

        scorer = self

        class ScorewrightRewards:
            # verifiers ships no type information: its decorators are untyped.
            @vf.metric(priority=scorer.priority)  # type: ignore[untyped-decorator]
            async def scorewright_signals(self, trace: Any) -> dict[str, float]:
                return await scorer.signals(trace)

            @vf.reward(weight=scorer.weight, priority=scorer.priority)  # type: ignore[untyped-decorator]
            async def scorewright(self, trace: Any) -> float:
                return await scorer.reward(trace)

        return ScorewrightRewards


class FitnessError(ScorewrightError):
    """The fitness function could not score a result (its error is recorded, not a 0.0)."""


def judged(result: ScoreResult, fitness: Fitness) -> tuple[FitnessOutcome, float]:
    """The fitness outcome and score of ``result``. Raises InfrastructureError for a result
    that is not the candidate's to answer for, FitnessError when the fitness failed: no loop
    may record either as a score."""
    if result.infrastructure:
        raise InfrastructureError(f"{INFRASTRUCTURE_PREFIX} (retry it): {result.error}")
    outcome = fitness.evaluate(result)
    if outcome.score is None:
        raise FitnessError(
            f"scorewright: fitness {outcome.name!r} could not score the result: {outcome.error}"
        )
    return outcome, outcome.score


def _v1_judged(result: ScoreResult, fitness: Fitness) -> tuple[FitnessOutcome, float]:
    try:
        return judged(result, fitness)
    except InfrastructureError as exc:
        import verifiers.v1 as vf

        # A RolloutError type passes verifiers' scoring boundary unchanged, so the trace
        # records "SandboxError" (a retry rule matches the type and the message).
        raise vf.SandboxError(str(exc)) from None


def keyed_scores(result: ScoreResult, outcome: FitnessOutcome) -> dict[str, float]:
    scores = {
        f"scorewright_{name}": value
        for name in SIGNALS
        if (value := result.signal(name)) is not None
    }
    # Every objective's signal, where measured (objective_<name>).
    scores.update(
        {
            f"scorewright_{s.name}": s.value
            for s in result.signals
            if s.name.startswith("objective_")
        }
    )
    scores["scorewright_ok"] = float(result.ok)
    scores["scorewright_flagged"] = float(result.integrity.flagged)
    scores["scorewright_rejected"] = float(result.integrity.rejected)
    return scores


def verifiers_reward(
    evaluator: Evaluator,
    fitness: Fitness | None = None,
    *,
    weight: float = 1.0,
    extract: Callable[[Any], str] = extract_code,
) -> tuple[Callable[..., float], float]:
    """For verifiers before 0.3 (tested with 0.2.1): a ``vf.Rubric`` reward function and its
    weight, ``vf.Rubric(funcs=[reward], weights=[weight])``.

    The Rubric turns any exception of a reward function into 0.0, so an error of ours goes
    through the rollout's own error channel instead: ``state["error"]`` is set to
    ``vf.InfraError`` (which verifiers retries when ``max_retries`` is set, and reports on the
    rollout otherwise) and the reward is 0.0 only beside that error."""
    fitness = fitness or Fitness()

    def scorewright_reward(completion: Any, state: Any = None, **_: Any) -> float:
        with private_tempdir("scorewright-completion-") as tmp:
            path = Path(tmp) / f"{evaluator.module}.py"
            path.write_text(extract(completion), encoding="utf-8")
            result = evaluator.score(path)
        try:
            return judged(result, fitness)[1]
        except InfrastructureError as exc:
            _record_rollout_error(state, "InfraError", str(exc))
        except FitnessError as exc:
            _record_rollout_error(state, "Error", str(exc))
        return 0.0

    return scorewright_reward, weight


def _record_rollout_error(state: Any, kind: str, message: str) -> None:
    import verifiers as vf

    error_type = getattr(vf, kind, None)
    if not isinstance(state, MutableMapping) or not isinstance(error_type, type):
        # Nowhere to report it: better an exception in the rollout's log than a quiet 0.0.
        raise InfrastructureError(message) if kind == "InfraError" else FitnessError(message)
    state["error"] = error_type(message)
