"""Evidence relative to the trusted side: what the reference does is not held against a
candidate.

Real libraries walk frames, call ``gc``, load ``ctypes``, open sockets, read files their
tests hand them and keep ``time.monotonic`` as a default argument. So the reference runs
through the same sandbox when the Evaluator is prepared, and what its monitor reported in each
test (and while test modules were imported, and at the session's end) is allowed in the same
place for every candidate. Assertion operands are compared the same way: a non-plain operand
counts where the reference's operand at the same place was plain data. Without a reference
the same rules apply with no allowance (and a non-plain operand counts only when its class
is the candidate's own, with its own comparison).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from pytest_scorewright.integrity.codes import reason
from pytest_scorewright.integrity.recheck_evidence import GIVEN, RETURNED
from pytest_scorewright.integrity.verdict import Canary, CanaryKey, RunVerdict, SideKey
from pytest_scorewright.result import Reason, TestRecord


@dataclass(frozen=True)
class TrustedRun:
    """What the reference did in one suite's run."""

    #: (test, code) of every monitor finding (tests, COLLECTION, SESSION).
    findings: frozenset[tuple[str, str]] = frozenset()
    #: Re-checked operands: whether every one at that place was plain data.
    plain: dict[SideKey, bool] = field(default_factory=dict)
    #: Test modules that announced the trusted bytecode.
    instrumented: frozenset[str] = frozenset()
    #: Fresh-argument benchmark rounds' prints, by test (integrity/timed.py).
    timed_prints: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: Impossible canaries tried: only a place where every one failed is a canary.
    canaries: dict[CanaryKey, Canary] = field(default_factory=dict)

    @classmethod
    def of(cls, verdict: RunVerdict) -> TrustedRun:
        return cls(
            findings=frozenset((f.test, f.code) for f in verdict.findings),
            plain=dict(verdict.plain),
            instrumented=frozenset(verdict.instrumented),
            timed_prints=dict(verdict.timed_prints),
            canaries=dict(verdict.canaries),
        )

    def witnessed(self, gold: TrustedRun) -> TrustedRun:
        """This run's evidence, and a second trusted program's (``gold``: a baseline
        reference's fix) at the places this run has none: those it never reached because it
        failed first. What either trusted program did is allowed."""
        return TrustedRun(
            findings=self.findings | gold.findings,
            plain={**gold.plain, **self.plain},
            instrumented=self.instrumented | gold.instrumented,
            timed_prints=self.timed_prints,
            canaries={**gold.canaries, **self.canaries},
        )


def module_of(nodeid: str) -> str:
    """``tests/sub/test_x.py::test_a[1]`` -> ``sub/test_x.py``: the test file's path in the
    suite, as the instrumented bytecode names it (every run copies the suite to tests/)."""
    path = nodeid.split("::", 1)[0]
    return path.split("/", 1)[1] if "/" in path else path


def runtime_reasons(name: str, verdict: RunVerdict, trusted: TrustedRun | None) -> list[Reason]:
    """The run's monitor findings, stream reasons and re-checked operands, less what the
    reference did in the same place."""
    allowed = trusted.findings if trusted is not None else frozenset()
    found = [
        reason(f.code, f"{name} run: {_where(f.test)}{f.detail}")
        for f in verdict.findings
        if (f.test, f.code) not in allowed
    ]
    # The stream's own reasons are never allowed: the Evaluator refuses a suite whose
    # reference run has any.
    found += [Reason(r.code, f"{name} run: {r.detail}", r.severity) for r in verdict.reasons]
    found += _not_plain(name, verdict, trusted)
    found += canary_reasons(name, verdict, trusted)
    if trusted is not None:
        found += _missing_instrumentation(name, verdict.records, verdict.instrumented, trusted)
    return found


def _where(test: str) -> str:
    if test.startswith("<"):
        return "while importing the tests: " if test == "<collection>" else "after the tests: "
    return f"in {test[:200]}: "


def _not_plain(name: str, verdict: RunVerdict, trusted: TrustedRun | None) -> list[Reason]:
    """The first call result and the first assertion operand held against the reference."""
    found: dict[str, Reason] = {}
    for key, seen in verdict.not_plain.items():
        test, site, index = key
        reference_plain = trusted.plain.get(key) if trusted is not None else None
        if index == GIVEN:
            # Where the reference's objects were handed no value at that place and
            # operation (and always without a reference, as before).
            if reference_plain is None:
                place = site.rsplit(" ", 1)
                found.setdefault(
                    "handle_given_value",
                    reason(
                        "handle_given_value",
                        f"{name} run: in {test[:200]}: at {place[0]} a {seen.type_name} of "
                        f"the candidate's was handed a test's value ({place[-1]}), where the "
                        "reference's objects were handed none",
                    ),
                )
            continue
        if index == RETURNED:
            # Only where the reference's call at that site returned plain data: not where it
            # got an object of its own too, nor where it never made the call.
            if reference_plain is True:
                found.setdefault(
                    "returned_handle",
                    reason(
                        "returned_handle",
                        f"{name} run: in {test[:200]}: the call at {site} returned a "
                        f"{seen.type_name}, an object of the candidate's own, where the "
                        "reference's call there returned plain data",
                    ),
                )
            continue
        if reference_plain is True:
            why = "where the reference's was plain data"
        elif reference_plain is None and seen.own:
            why = "of the candidate's own class, with its own comparison"
        else:
            continue
        side = ("left", "right")[index] if index < 2 else f"#{index}"
        found.setdefault(
            "assertion_not_plain",
            reason(
                "assertion_not_plain",
                f"{name} run: in {test[:200]}: the assertion at {site} passed on a "
                f"{seen.type_name} ({side} operand), {why}",
            ),
        )
    return list(found.values())


#: What each canary changed, for the reason's detail.
_CANARY_KIND = {
    "==": "with the value it was compared with changed",
    "in": "with the member changed",
    "<": "reversed (>=)",
    "<=": "reversed (>)",
    ">": "reversed (<=)",
    ">=": "reversed (<)",
}


def canary_reasons(name: str, verdict: RunVerdict, trusted: TrustedRun | None) -> list[Reason]:
    """The first impossible canary the run passed where the reference's run failed it at
    the same test and place (child/test_process/canaries.py). No correct program passes one:
    candidate
    code decided the assertion, whatever the mechanism. Without a reference, a canary passed
    is only a hint (no run showed that the suite's own values fail it)."""
    for (test, site), seen in verdict.canaries.items():
        if not seen.passed:
            continue
        theirs = trusted.canaries.get((test, site)) if trusted is not None else None
        if trusted is not None and (theirs is None or theirs.passed):
            continue
        what = _CANARY_KIND.get(seen.op, seen.op)
        detail = (
            f"{name} run: in {test[:200]}: the assertion at {site} ({seen.op}) also held "
            f"{what}, an impossible variant"
        )
        if trusted is None:
            return [Reason("canary_passed", f"{detail} (no reference to check it against)", "hint")]
        return [reason("canary_passed", f"{detail}; the reference's run failed it there")]
    return []


def _missing_instrumentation(
    name: str, records: Iterable[TestRecord], instrumented: set[str], trusted: TrustedRun
) -> list[Reason]:
    for record in records:
        module = module_of(record.nodeid)
        if record.passed and module in trusted.instrumented and module not in instrumented:
            return [
                reason(
                    "recheck_missing",
                    f"{name} run: {record.nodeid[:200]} passed, but {module} never ran the "
                    "trusted bytecode the parent made for it",
                )
            ]
    return []
