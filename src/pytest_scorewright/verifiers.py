"""The verifiers adapter: a reward function that scores a completion's code in the sandbox.

verifiers takes reward functions with weights::

    reward, weight = verifiers_reward(Evaluator("tests/", reference="ref/"))
    rubric = vf.Rubric(funcs=[reward], weights=[weight])
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_scorewright.evaluator import Evaluator
from pytest_scorewright.fitness import Fitness

_CODE_BLOCK = re.compile(r"```(?:python|py)?\s*\n(.*?)```", re.S)


def extract_code(completion: Any) -> str:
    """The last fenced code block of a completion (a string, or chat messages), else all."""
    if isinstance(completion, list):
        texts = [m.get("content", "") for m in completion if isinstance(m, dict)]
        completion = texts[-1] if texts else ""
    text = str(completion)
    blocks = _CODE_BLOCK.findall(text)
    return blocks[-1] if blocks else text


def verifiers_reward(
    evaluator: Evaluator,
    fitness: Fitness | None = None,
    *,
    weight: float = 1.0,
    extract: Callable[[Any], str] = extract_code,
) -> tuple[Callable[..., float], float]:
    """A verifiers reward function and its weight: the completion's code, scored in the
    sandbox; the reward is the fitness (0.0 when the fitness could not be computed)."""
    fitness = fitness or Fitness()

    def scorewright_reward(completion: Any, **_: Any) -> float:
        with tempfile.TemporaryDirectory(prefix="scorewright-completion-") as tmp:
            path = Path(tmp) / f"{evaluator.module}.py"
            path.write_text(extract(completion), encoding="utf-8")
            outcome = fitness.evaluate(evaluator.score(path))
        return outcome.score if outcome.score is not None else 0.0

    return scorewright_reward, weight
