"""What a failed candidate's result says names its own files, never the run's work dir: a
random directory name is noise to the LLM reading it, and made two Evaluators' results of
the same candidate differ (score_many's pipelines each have their own)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_scorewright.evaluator import Evaluator

pytestmark = pytest.mark.sandbox

TASK = Path(__file__).resolve().parents[1] / "corpus" / "numbers"
RIGHT = (TASK / "reference" / "solution.py").read_text(encoding="utf-8")

#: Candidates that fail in ways an LLM's code does, and what their error must say.
BROKEN = {
    "syntax": ("def is_prime(n):\n    return n > 1\ndef gcd(a, b)\n    return a\n", "line 3"),
    "indentation": ("def is_prime(n):\n  if n:\n    return 1\n   return 2\n", "line 4"),
    "import-time": (RIGHT + "\nvalue = undefined_name\n", "undefined_name"),
    "missing function": ("def is_prime(n):\n    return n > 1\n", "cannot import name 'fib'"),
    "exit at import": (RIGHT + "\nimport sys\nsys.exit(3)\n", "SystemExit: 3"),
}


@pytest.fixture(scope="module", params=["process", "in-process"])
def evaluator(request: pytest.FixtureRequest) -> Iterator[Evaluator]:
    with Evaluator(
        TASK / "tests",
        heldout=TASK / "heldout",
        reference=TASK / "reference",
        isolation=request.param,
    ) as ev:
        yield ev


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_a_broken_candidate_is_told_about_its_own_files_only(
    evaluator: Evaluator, kind: str, tmp_path: Path
) -> None:
    source, says = BROKEN[kind]
    candidate = tmp_path / "solution.py"
    candidate.write_text(source, encoding="utf-8")
    result = evaluator.score(candidate)
    assert result.error is not None
    assert says in result.error
    text = result.to_json()
    assert "scorewright-" not in text  # no work dir, fixed or not
    assert "/candidate/" not in text
    assert all("scorewright-" not in e.message for e in result.collection_errors)


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_a_broken_candidate_is_told_where_in_its_file(
    evaluator: Evaluator, kind: str, tmp_path: Path
) -> None:
    candidate = tmp_path / "solution.py"
    candidate.write_text(BROKEN[kind][0], encoding="utf-8")
    error = evaluator.score(candidate).error
    assert error is not None
    assert "solution.py" in error


def test_a_failing_test_message_names_the_candidate_file_without_a_work_dir(
    evaluator: Evaluator, tmp_path: Path
) -> None:
    candidate = tmp_path / "solution.py"
    candidate.write_text(
        RIGHT + "\n\ndef gcd(a, b):\n    raise ValueError('gcd is not done')\n", encoding="utf-8"
    )
    result = evaluator.score(candidate)
    failed = [t for t in result.tests if t.outcome == "failed"]
    assert failed
    assert any("gcd is not done" in (t.message or "") for t in failed)
    assert all("scorewright-" not in (t.message or "") for t in result.tests)
