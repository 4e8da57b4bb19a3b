"""The verifiers reward, on the bundled example task."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_scorewright.evaluator import Evaluator
from pytest_scorewright.verifiers import extract_code, verifiers_reward

TASK = Path(__file__).resolve().parent.parent / "examples" / "quickstart"


@pytest.fixture(scope="module")
def evaluator() -> Evaluator:
    return Evaluator(TASK / "tests", reference=TASK / "reference")


@pytest.mark.sandbox
def test_the_verifiers_reward_scores_a_completions_code(evaluator: Evaluator) -> None:
    reward, weight = verifiers_reward(evaluator, weight=2.0)
    good = (TASK / "reference" / "solution.py").read_text()
    chat = [
        {"role": "user", "content": "write it"},
        {"role": "assistant", "content": f"Here:\n```python\n{good}```\nDone."},
    ]
    assert weight == 2.0
    assert reward(chat) == 1.0
    assert reward("```python\ndef encode(t):\n    return []\n```") < 0.5
    assert reward("no code at all") == 0.0


def test_extract_code_takes_the_last_block() -> None:
    assert extract_code("```py\na = 1\n```\ntext\n```python\nb = 2\n```") == "b = 2\n"
    assert extract_code("plain") == "plain"
