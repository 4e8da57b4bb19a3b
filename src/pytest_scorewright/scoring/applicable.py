"""Which tests apply: the reference's run decides.

A real suite skips tests by platform, Python version or optional dependency, and marks known
bugs xfail. A test the reference skips or xfails measures nothing about a candidate, so it is
*not applicable*: its record gets the outcome ``not_applicable`` (with what the reference
did, ``reference_outcome``) and it stays out of every pass-rate denominator. A test the
reference fails makes the suite unusable as it stands, unless the caller asks for the
reference as a *baseline*: then the tests it fails are not applicable too, and the result
counts them (``reference_failures``).

A skip raised from candidate code in a test the reference runs is not touched here: the
test keeps its ``skipped`` outcome (not passed), and the integrity layer's
``skip_from_candidate`` finding stands.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from pytest_scorewright._text import bound_message
from pytest_scorewright.result import TestRecord

#: Reference outcomes that say the test does not apply here (skipped by a condition, or
#: marked as an expected failure, whether it then failed or passed).
INAPPLICABLE = frozenset({"skipped", "xfailed", "xpassed"})
FLAKY = "its outcomes across its runs: "


def flaky_tests(runs: Sequence[Iterable[TestRecord]]) -> dict[str, str]:
    """Tests whose outcome differs between the reference's runs (``reference_repeats``),
    each with its outcomes (``passed 2, failed 1``)."""
    seen: dict[str, list[str]] = {}
    for records in runs:
        for record in records:
            if record.outcome != "not_run":  # a run stopped early says nothing of it
                seen.setdefault(record.nodeid, []).append(record.outcome)
    return {
        nodeid: ", ".join(f"{o} {outcomes.count(o)}" for o in sorted(set(outcomes)))
        for nodeid, outcomes in seen.items()
        if len(set(outcomes)) > 1
    }


@dataclass(frozen=True)
class ReferenceOutcomes:
    """What the reference's runs say about applicability, per suite's node ids.

    Example::

        ref = ReferenceOutcomes.of(reference_records, baseline=False)
        if ref.failing:
            ...  # refuse: the reference fails tests of its own suite
        records = ref.apply(candidate_records)
    """

    #: Node id → the reference's record, for every test that does not apply.
    excluded: Mapping[str, TestRecord]
    #: Tests the reference fails that are *not* excluded (baseline off): the caller refuses.
    failing: Sequence[TestRecord]
    #: Tests the reference fails that were excluded because the reference is the baseline.
    baseline_failures: int = 0
    #: Of the ``measured`` tests (known to fail with the reference), those it passed: a
    #: repository task whose fail-to-pass list is wrong (scorewright verify refuses it).
    measured_passed: frozenset[str] = frozenset()

    @classmethod
    def of(
        cls,
        records: Iterable[TestRecord],
        *,
        baseline: bool,
        flaky: Mapping[str, str] | None = None,
        measured: Collection[str] = (),
    ) -> ReferenceOutcomes:
        """``flaky``: node id -> how the reference's own runs of it differed. ``measured``:
        tests the reference is known to fail (a repository task's fail-to-pass tests, the
        reference being the code before the fix): scored like any other, never refused nor
        excluded for failing."""
        excluded: dict[str, TestRecord] = {}
        failing: list[TestRecord] = []
        passed: set[str] = set()
        for record in records:
            if record.passed and record.nodeid in measured:
                passed.add(record.nodeid)
            if flaky and record.nodeid in flaky:
                excluded[record.nodeid] = replace(record, message=FLAKY + flaky[record.nodeid])
            elif record.outcome in INAPPLICABLE:
                excluded[record.nodeid] = record
            elif not record.passed and record.nodeid not in measured:
                if baseline:
                    excluded[record.nodeid] = record
                else:
                    failing.append(record)
        baseline_failures = sum(
            r.outcome not in INAPPLICABLE and not is_flaky(r) for r in excluded.values()
        )
        return cls(excluded, failing, baseline_failures, frozenset(passed))

    def apply(self, records: Iterable[TestRecord]) -> list[TestRecord]:
        """``records`` with every excluded test's outcome replaced by ``not_applicable``."""
        return [self._apply(r) if r.nodeid in self.excluded else r for r in records]

    def _apply(self, record: TestRecord) -> TestRecord:
        reference = self.excluded[record.nodeid]
        verb = "is flaky in" if is_flaky(reference) else _verb(reference.outcome)
        why = f"the reference {verb} it"
        first = (reference.message or "").strip().splitlines()
        if first:  # its first line only, so that this run's outcome stays in view
            why += f" ({first[0][:200]})"
        own = f"this run: {record.outcome}"
        if record.message:
            own += f": {record.message}"
        return replace(
            record,
            outcome="not_applicable",
            phase=None,
            message=bound_message(f"not applicable: {why}; {own}"),
            reference_outcome=reference.outcome,
        )


def is_flaky(reference: TestRecord) -> bool:
    """Whether the reference's own runs of this test disagreed (it was set aside as flaky)."""
    return (reference.message or "").startswith(FLAKY)


def _verb(outcome: str) -> str:
    return {
        "skipped": "skips",
        "xfailed": "xfails",
        "xpassed": "xpasses",
        "failed": "fails",
        "error": "errors in",
        "timeout": "times out in",
        "not_run": "never runs",
    }.get(outcome, outcome)
