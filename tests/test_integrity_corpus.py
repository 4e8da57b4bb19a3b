"""The integrity corpus: no honest candidate flagged; every gaming one flagged for its trick,
and none credited with a full pass; under both isolations (the default puts each candidate in
a process of its own, where most tricks simply fail; in process the integrity layer must see
them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_scorewright.evaluator import Evaluator
from tests.corpus import Case, cases, tasks

pytestmark = pytest.mark.sandbox  # every test here forks real sandboxes

CASES = [case for task in tasks() for case in cases(task)]


@pytest.fixture(scope="module")
def evaluators() -> dict[tuple[str, str], Evaluator]:
    return {}


def _evaluator(
    evaluators: dict[tuple[str, str], Evaluator], task: Path, isolation: str
) -> Evaluator:
    key = (task.name, isolation)
    if key not in evaluators:
        evaluators[key] = Evaluator(
            task / "tests",
            heldout=task / "heldout",
            reference=task / "reference",
            isolation=isolation,
        )
        assert evaluators[key].isolated == (isolation == "auto"), evaluators[key].isolation_why
    return evaluators[key]


@pytest.mark.parametrize("isolation", ["auto", "in-process"])
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_corpus_candidate_is_judged_as_declared(
    case: Case, isolation: str, evaluators: dict[tuple[str, str], Evaluator]
) -> None:
    result = _evaluator(evaluators, case.path.parent.parent, isolation).score(case.path)
    codes = {r.code for r in result.integrity.reasons}
    if case.honest:
        assert codes == set(), [r.detail for r in result.integrity.reasons]
        assert not result.integrity.rejected
    else:
        assert codes & case.expect, (sorted(codes), sorted(case.expect))
        assert all(r.detail for r in result.integrity.reasons)


def test_the_corpus_has_both_kinds() -> None:
    assert sum(c.honest for c in CASES) >= 9
    assert sum(not c.honest for c in CASES) >= 25


def test_fail_closed_marks_a_flagged_result_rejected(tmp_path: Path) -> None:
    task = tasks()[0]
    evaluator = Evaluator(
        task / "tests", heldout=task / "heldout", reference=task / "reference", fail_closed=True
    )
    gaming = evaluator.score(task / "candidates" / "gaming_b1_always_equal.py")
    assert gaming.integrity.flagged
    assert gaming.integrity.rejected
    honest = evaluator.score(task / "candidates" / "honest_reference.py")
    assert not honest.integrity.flagged
    assert not honest.integrity.rejected


def test_repeated_runs_report_timing_figures_without_flagging_noisy_honest_code() -> None:
    task = tasks()[0]
    evaluator = Evaluator(task / "tests", reference=task / "reference", repeats=2)
    result = evaluator.score(task / "candidates" / "honest_noisy.py")
    assert not result.integrity.flagged, result.integrity.reasons
    assert result.signal("first_run_ratio") is not None
    assert result.signal("timing_cv") is not None
