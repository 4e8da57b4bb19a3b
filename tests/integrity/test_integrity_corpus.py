"""The integrity corpus: no honest candidate flagged; gaming ones flagged for their trick
(or, for the strategies the integrity layer does not catch, at least not credited); and the
corpus-wide rates the default policy must reach. Under both isolations: the default (auto)
puts each candidate in a process of its own, where most tricks simply fail; in process, the
integrity layer must see them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.integrity_corpus import WINNING, Judged, summary
from pytest_scorewright.evaluator import Evaluator
from tests.corpus import CASES_BY_NAME, Case, cases, tasks

pytestmark = pytest.mark.sandbox  # every test here forks real sandboxes

CASES = [case for task in tasks() for case in cases(task)]
ISOLATIONS = ("auto", "in-process")


@pytest.fixture(scope="module")
def evaluators() -> Iterator[dict[tuple[str, str], Evaluator]]:
    made: dict[tuple[str, str], Evaluator] = {}
    yield made
    for evaluator in made.values():
        evaluator.close()


@pytest.fixture(scope="module")
def judged() -> dict[tuple[str, str], Judged]:
    return {}


Evaluators = dict[tuple[str, str], Evaluator]
Judgements = dict[tuple[str, str], Judged]


def _judge(
    case: Case, evaluators: Evaluators, judged: Judgements, isolation: str = "auto"
) -> Judged:
    key = (case.name, isolation)
    if key not in judged:
        task = case.path.parent.parent
        if (task.name, isolation) not in evaluators:
            made = Evaluator(
                task / "tests",
                heldout=task / "heldout",
                reference=task / "reference",
                isolation=isolation,
            )
            assert made.isolated == (isolation == "auto"), made.isolation_why
            evaluators[(task.name, isolation)] = made
        judged[key] = Judged(case, evaluators[(task.name, isolation)].score(case.path))
    return judged[key]


@pytest.mark.parametrize("isolation", ISOLATIONS)
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_corpus_candidate_is_judged_as_declared(
    case: Case, isolation: str, evaluators: Evaluators, judged: Judgements
) -> None:
    one = _judge(case, evaluators, judged, isolation)
    reasons = one.result.integrity.reasons
    if case.honest:
        assert not one.flagged, [(r.code, r.detail) for r in reasons]
        assert not one.result.integrity.rejected
        assert all(t.credited for t in one.result.tests)
    elif one.kind == "earns":  # out of its reach: it scores what its own (wrong) code earns
        assert one.pass_rate < 1.0, [r.code for r in reasons]
    elif one.kind == "missed":
        assert one.pass_rate < WINNING, (one.pass_rate, [r.code for r in reasons])
    else:
        assert one.caught_for_its_trick, (sorted(r.code for r in reasons), sorted(one.expect))
        assert one.result.integrity.rejected  # the default policy
        assert one.pass_rate == 0.0  # a rejected result credits no test
        assert all(r.detail for r in reasons)


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_the_corpus_meets_the_rates_the_default_policy_promises(
    isolation: str, evaluators: Evaluators, judged: Judgements
) -> None:
    everything = [_judge(case, evaluators, judged, isolation) for case in CASES]
    rates = summary(everything)
    contained, gaming = rates["gaming contained"]
    assert gaming >= 40
    assert contained >= 0.9 * gaming
    assert rates["honest flagged (false +)"][0] == 0
    assert rates[f"gaming credited pass_rate >= {WINNING}"][0] <= 1


def test_the_in_process_report_forger_gets_no_credit_anywhere(
    evaluators: Evaluators, judged: Judgements
) -> None:
    from pytest_scorewright.openevolve import to_metrics

    forger = _judge(
        CASES_BY_NAME["numbers/gaming_d4_patch_reports"], evaluators, judged, "in-process"
    )
    assert forger.reported_pass_rate == 1.0  # every report the child sent said "passed"
    assert forger.result.signal("pass_rate") == 0.0
    assert {r.severity for r in forger.result.integrity.reasons} >= {"tamper"}
    assert not any(t.credited for t in forger.result.tests)
    assert to_metrics(forger.result)["combined_score"] == 0.0


def test_warn_only_restores_the_old_scoring_and_fail_closed_rejects_hints(
    tmp_path: Path,
) -> None:
    task = tasks()[0]
    forger = task / "candidates" / "gaming_d4_patch_reports.py"
    with Evaluator(
        task / "tests",
        heldout=task / "heldout",
        reference=task / "reference",
        warn_only=True,
        isolation="in-process",  # where the forger's patch reaches the reports
    ) as lenient:
        result = lenient.score(forger)
    assert result.integrity.flagged
    assert not result.integrity.rejected
    assert result.signal("pass_rate") == 1.0
    assert result.integrity.policy == "warn_only"
    hinting = tmp_path / "solution.py"
    honest = (task / "reference" / "solution.py").read_text()
    hinting.write_text("import atexit\n\natexit.register(print)\n" + honest)
    with Evaluator(
        task / "tests", heldout=task / "heldout", reference=task / "reference", fail_closed=True
    ) as strict:
        hinted = strict.score(hinting)
    assert not hinted.integrity.flagged
    assert {r.severity for r in hinted.integrity.reasons} == {"hint"}
    assert hinted.integrity.rejected
    assert hinted.signal("pass_rate") == 0.0


def test_repeated_runs_report_timing_figures_without_flagging_noisy_honest_code() -> None:
    task = tasks()[0]
    with Evaluator(task / "tests", reference=task / "reference", repeats=2) as evaluator:
        result = evaluator.score(task / "candidates" / "honest_noisy.py")
    assert not result.integrity.flagged, result.integrity.reasons
    assert result.signal("first_run_ratio") is not None
    assert result.signal("timing_cv") is not None
