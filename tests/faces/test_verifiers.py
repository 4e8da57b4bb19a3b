"""The verifiers adapter, through the installed verifiers 0.4 package's own scoring machinery.

A verifiers rollout needs a model; everything after the model's reply runs here as verifiers
runs it: a task class whose ``@vf.reward``/``@vf.metric`` methods verifiers discovers,
``Task.score`` (the call a rollout and ``vf-replay`` make) on a ``Trace`` holding the model's
reply, keyed scores recorded by verifiers, its error boundary, and its retry rules read from
the recorded error. Errors of ours are made for real: the warm parent is killed mid-run.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_scorewright.evaluator import Evaluator
from pytest_scorewright.fitness import Fitness
from pytest_scorewright.verifiers import INFRASTRUCTURE_PREFIX, Scorer, extract_code
from tests.conftest import sandbox_processes, slow_in_first_call

TASK = Path(__file__).resolve().parents[2] / "examples" / "quickstart"
REFERENCE = (TASK / "reference" / "solution.py").read_text()
PARTIAL = (TASK / "solution.py").read_text()  # every visible test, one held-out test of two
# Sleeps in every run, so the warm parent can be killed while runs are alive.
SLOW = slow_in_first_call(REFERENCE, "encode", 4)


def _vf() -> Any:
    try:
        import verifiers
        import verifiers.v1 as vf
    except ImportError:
        pytest.skip("verifiers 0.4 is not installed: pip install -e '.[dev,loops]'")
    if tuple(int(p) for p in verifiers.__version__.split(".")[:2]) < (0, 4):
        pytest.skip(f"verifiers.v1 before 0.4 is another API (this is {verifiers.__version__})")
    return vf


@pytest.fixture(scope="module")
def evaluator() -> Iterator[Evaluator]:
    with Evaluator(TASK / "tests", heldout=TASK / "heldout", reference=TASK / "reference") as ev:
        yield ev


class CountingScorer(Scorer):
    """Counts the sandbox scorings, to show a trace is scored once for reward and metric."""

    scored = 0

    def score_code(self, code: str) -> Any:
        self.scored += 1
        return super().score_code(code)


def _task(vf: Any, scorer: Scorer) -> Any:
    class CodeTask(scorer.rewards(), vf.Task):  # type: ignore[misc]  # verifiers is untyped
        pass

    return CodeTask(vf.TaskData(prompt="Write encode and decode for run-length encoding."))


def _trace(vf: Any, task: Any, reply: str) -> Any:
    """A trace as a rollout records it: the task, the prompt, the model's sampled reply."""
    from verifiers.v1.configs.agent import AgentConfig

    trace = vf.Trace(
        task=vf.TraceTask(type=type(task).__name__, data=task.data, key=task.key, hash=task.hash),
        agent=vf.AgentInfo(config=AgentConfig()),
    )
    trace.nodes.append(vf.MessageNode(message=vf.UserMessage(content=task.data.prompt_text)))
    trace.nodes.append(
        vf.MessageNode(parent=0, message=vf.AssistantMessage(content=reply), sampled=True)
    )
    return trace


def _fenced(code: str) -> str:
    return f"Here is my solution:\n```python\n{code}```\nIt handles empty input too."


@pytest.mark.sandbox
def test_a_verifiers_task_is_rewarded_with_the_fitness_and_keyed_signals(
    evaluator: Evaluator,
) -> None:
    vf = _vf()
    scorer = CountingScorer(evaluator, weight=2.0)
    task = _task(vf, scorer)
    assert [fn.__name__ for fn in task.hooks("reward")] == ["scorewright"]
    assert [fn.__name__ for fn in task.hooks("metric")] == ["scorewright_signals"]

    best = _trace(vf, task, _fenced(REFERENCE))
    asyncio.run(task.score(best))  # no runtime: as vf-replay scores a saved trace
    assert best.rewards["scorewright"].score == 1.0
    assert best.rewards["scorewright"].weight == 2.0
    assert best.reward == 2.0  # only the fitness is summed
    assert best.metrics["scorewright_pass_rate"] == 1.0
    assert best.metrics["scorewright_heldout_pass_rate"] == 1.0
    assert best.metrics["scorewright_flagged"] == 0.0
    assert "scorewright_signals" not in best.metrics  # keyed: recorded under its keys
    assert scorer.scored == 1

    partial = _trace(vf, task, _fenced(PARTIAL))
    asyncio.run(task.score(partial))
    assert partial.rewards["scorewright"].score == pytest.approx(8 / 9)
    assert partial.metrics["scorewright_visible_pass_rate"] == 1.0
    assert partial.metrics["scorewright_heldout_pass_rate"] == 0.5
    assert scorer.scored == 2

    # The completion's own failure is a low score, not an error.
    prose = _trace(vf, task, "I am not sure how to do this.")
    asyncio.run(task.score(prose))
    assert prose.rewards["scorewright"].score == 0.0
    assert prose.metrics["scorewright_ok"] == 0.0
    assert prose.errors == []


@pytest.mark.sandbox
def test_concurrent_rollouts_are_scored_at_once_each_once(evaluator: Evaluator) -> None:
    vf = _vf()
    scorer = CountingScorer(evaluator)
    task = _task(vf, scorer)
    traces = [_trace(vf, task, _fenced(code)) for code in (REFERENCE, PARTIAL, REFERENCE)]

    async def group() -> None:
        await asyncio.gather(*(task.score(t) for t in traces))

    asyncio.run(group())
    assert [t.rewards["scorewright"].score for t in traces] == pytest.approx([1.0, 8 / 9, 1.0])
    assert scorer.scored == 3
    assert scorer._pending == {}


@pytest.mark.sandbox
def test_an_error_of_ours_is_a_retryable_sandbox_error_on_the_trace_never_a_score(
    tmp_path: Path,
) -> None:
    vf = _vf()
    from verifiers.v1.utils.retries import RetryState

    with Evaluator(TASK / "tests", heldout=TASK / "heldout", reference=TASK / "reference") as ev:
        assert ev._runner.warm is not None
        task = _task(vf, Scorer(ev))
        trace = _trace(vf, task, _fenced(SLOW))
        killer = threading.Thread(target=_kill_when_runs_start, args=(ev._runner.warm._proc.pid,))
        killer.start()
        try:
            # What a rollout does with a scoring failure: verifiers records it on the trace.
            asyncio.run(task.score(trace))
        except Exception as exc:
            trace.record_error(exc)
        killer.join()
        assert not trace.ok
        assert trace.stop_condition == "sandbox_error"
        assert [e.type for e in trace.errors] == ["SandboxError"]
        assert trace.errors[0].message.startswith(INFRASTRUCTURE_PREFIX)
        assert "warm parent" in trace.errors[0].message
        assert trace.rewards["scorewright"] is None  # unscored, not 0.0
        assert trace.metrics.get("scorewright_signals") is None
        # The retry rule a user writes for it matches, through verifiers' own rule matcher.
        rule = vf.RetryRule(type="SandboxError", message="^scorewright:", max_retries=2)
        assert RetryState(vf.RetryConfig(rules=[rule])).next_error(trace.errors) is not None
        # And the retry is scored as if nothing had happened (the warm parent was restarted).
        again = _trace(vf, task, _fenced(SLOW))
        asyncio.run(task.score(again))
        assert again.rewards["scorewright"].score == 1.0
        assert ev._runner.warm.restarts == 1


def _kill_when_runs_start(warm_pid: int) -> None:
    deadline = time.monotonic() + 30
    while len(sandbox_processes(os.getpid())) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.3)  # both runs are in their sleep
    os.kill(warm_pid, signal.SIGKILL)


@pytest.mark.sandbox
def test_a_failing_fitness_function_is_a_task_error_not_a_zero(
    evaluator: Evaluator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vf = _vf()
    (tmp_path / "broken_fitness.py").write_text(
        textwrap.dedent(
            """
            class Broken:
                name = "broken"
                options = {}
                def score(self, metrics, config, context):
                    raise KeyError("pass_rat")
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        task = _task(vf, Scorer(evaluator, Fitness("broken_fitness:Broken")))
        trace = _trace(vf, task, _fenced(REFERENCE))
        with pytest.raises(vf.TaskError, match="fitness 'broken' could not score"):
            asyncio.run(task.score(trace))
        assert trace.rewards.get("scorewright") is None
    finally:
        sys.modules.pop("broken_fitness", None)


@pytest.mark.sandbox
def test_with_verifiers_before_0_3_an_error_of_ours_is_an_infra_error_the_rollout_retries() -> None:
    try:
        import verifiers as vf_old
        from verifiers.utils.async_utils import maybe_retry

        rubric_cls, infra_error = vf_old.Rubric, vf_old.InfraError
    except (ImportError, AttributeError):
        pytest.skip("needs verifiers < 0.3 (vf.Rubric): this environment has another version")
    from pytest_scorewright.verifiers import verifiers_reward

    with Evaluator(TASK / "tests", heldout=TASK / "heldout", reference=TASK / "reference") as ev:
        assert ev._runner.warm is not None
        reward, weight = verifiers_reward(ev, weight=2.0)
        rubric = rubric_cls(funcs=[reward], weights=[weight])
        attempts: list[dict[str, Any]] = []

        async def rollout() -> dict[str, Any]:
            # What verifiers 0.2's Environment runs per attempt: the rollout, then its scoring.
            state: dict[str, Any] = {
                "prompt": [{"role": "user", "content": "write it"}],
                "completion": [{"role": "assistant", "content": _fenced(SLOW)}],
                "answer": "",
                "info": {},
                "error": None,
            }
            attempts.append(state)
            await rubric.score_rollout(state)
            return state

        assert ev._runner.warm is not None
        killer = threading.Thread(target=_kill_when_runs_start, args=(ev._runner.warm._proc.pid,))
        killer.start()
        final = asyncio.run(maybe_retry(rollout, max_retries=1)())
        killer.join()
        assert len(attempts) == 2
        assert isinstance(attempts[0]["error"], infra_error)
        assert str(attempts[0]["error"]).startswith(INFRASTRUCTURE_PREFIX)
        assert final["error"] is None
        assert final["reward"] == 2.0


def test_extract_code_takes_the_last_block() -> None:
    assert extract_code("```py\na = 1\n```\ntext\n```python\nb = 2\n```") == "b = 2\n"
    assert extract_code("plain") == "plain"
    assert extract_code([{"role": "assistant", "content": "```\nc = 3\n```"}]) == "c = 3\n"
