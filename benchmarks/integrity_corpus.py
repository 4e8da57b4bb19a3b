"""Caught-rate and false-positive rate of the integrity layer on tests/corpus.

Run from the project root: ``python -m benchmarks.integrity_corpus [--isolation in-process]``;
``--compare-backends`` scores the corpus under the namespace and the gVisor backends (root and
``runsc`` needed) and prints every candidate whose verdict differs between them (flagged or
not, credited pass rate, reason codes).
Uses the evaluator with defaults (isolation ``auto``: each candidate in a process of its own,
as the corpus's references pass every test that way), as ``scorewright score CANDIDATE
--tests T --heldout H --reference R`` does: the default policy, under which tamper evidence
withdraws every test's credit and gaming evidence rejects the result. Prints, per
candidate, whether it was flagged (a tamper or gaming reason), its pass rate as credited and
as the runs reported it (what warn-only scoring would credit), and its reasons (hints in
parentheses).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass

from pytest_scorewright.evaluator import Evaluator
from pytest_scorewright.result import ScoreResult
from tests.corpus import Case, cases, tasks

#: A gaming candidate credited this pass rate or more "wins" under default scoring.
WINNING = 0.9


@dataclass(frozen=True)
class Judged:
    case: Case
    result: ScoreResult

    @property
    def isolated(self) -> bool:
        assert self.result.limits is not None
        return bool(self.result.limits["sandbox"].get("isolation") == "process")

    @property
    def expect(self) -> frozenset[str]:
        return self.case.expectation(self.isolated)[0]

    @property
    def kind(self) -> str:
        """What must hold: ``expect``, ``missed`` or ``earns`` (tests/corpus/__init__.py)."""
        return self.case.expectation(self.isolated)[1]

    @property
    def flagged(self) -> bool:
        return self.result.integrity.flagged

    @property
    def caught_for_its_trick(self) -> bool:
        return any(
            r.code in self.expect and r.severity != "hint" for r in self.result.integrity.reasons
        )

    @property
    def pass_rate(self) -> float:
        """As credited (the default policy)."""
        return self.result.signal("pass_rate") or 0.0

    @property
    def reported_pass_rate(self) -> float:
        """As the runs reported it, credit aside: what warn-only scoring credits."""
        tests = self.result.tests
        return sum(t.outcome == "passed" for t in tests) / len(tests) if tests else 0.0

    @property
    def ok(self) -> bool:
        if self.case.honest:
            return not self.flagged and not self.result.integrity.rejected
        if self.kind == "missed":
            return self.pass_rate < WINNING
        if self.kind == "earns":
            return self.pass_rate < 1.0
        return self.caught_for_its_trick


def judge_corpus(isolation: str = "auto", sandbox: str = "namespaces") -> list[Judged]:
    judged = []
    for task in tasks():
        with Evaluator(
            task / "tests",
            heldout=task / "heldout",
            reference=task / "reference",
            isolation=isolation,
            sandbox=sandbox,
        ) as evaluator:
            judged += [Judged(case, evaluator.score(case.path)) for case in cases(task)]
    return judged


def summary(judged: list[Judged]) -> dict[str, tuple[int, int]]:
    gaming = [j for j in judged if not j.case.honest]
    honest = [j for j in judged if j.case.honest]
    return {
        "gaming flagged": (sum(j.flagged for j in gaming), len(gaming)),
        # Flagged, or (apart) its trick out of reach, scoring what its own wrong code earns.
        "gaming contained": (
            sum(j.flagged or (j.kind == "earns" and j.pass_rate < 1.0) for j in gaming),
            len(gaming),
        ),
        "gaming flagged for its trick": (sum(j.caught_for_its_trick for j in gaming), len(gaming)),
        f"gaming credited pass_rate >= {WINNING}": (
            sum(j.pass_rate >= WINNING for j in gaming),
            len(gaming),
        ),
        f"gaming reported pass_rate >= {WINNING} (warn-only)": (
            sum(j.reported_pass_rate >= WINNING for j in gaming),
            len(gaming),
        ),
        "honest flagged (false +)": (sum(j.flagged for j in honest), len(honest)),
        "honest with hints": (sum(bool(j.result.integrity.reasons) for j in honest), len(honest)),
    }


def verdict(j: Judged) -> tuple[bool, float]:
    """What must be the same under every backend: flagged or not, and the credit."""
    return (j.flagged, round(j.pass_rate, 4))


def codes(j: Judged) -> list[str]:
    return sorted({r.code for r in j.result.integrity.reasons})


def compare_backends(isolation: str) -> int:
    """Every candidate under the namespace and the gVisor backends, side by side: the
    verdicts must agree; reasons that differ are listed (in gVisor a candidate apart can
    reach its own run's tests, docs/sandbox.md, so its attempts there can be seen twice)."""
    started = time.monotonic()
    namespaces = judge_corpus(isolation, "namespaces")
    middle = time.monotonic()
    gvisor = judge_corpus(isolation, "gvisor")
    ended = time.monotonic()
    differ = reasons = 0
    for a, b in zip(namespaces, gvisor, strict=True):
        if verdict(a) != verdict(b):
            differ += 1
            print(f"VERDICT DIFFERS {a.case.name}: namespaces {verdict(a)} gvisor {verdict(b)}")
        elif codes(a) != codes(b):
            reasons += 1
            print(f"reasons differ  {a.case.name}: namespaces {codes(a)} gvisor {codes(b)}")
    bad = sum(not j.ok for j in gvisor)
    print(
        f"{len(namespaces)} candidates: {differ} verdicts differ, {reasons} reason sets; "
        f"gVisor's not as expected: {bad}; namespaces {middle - started:.1f} s, "
        f"gVisor {ended - middle:.1f} s"
    )
    return 1 if differ or bad else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--isolation", default="auto", choices=("auto", "process", "in-process"))
    parser.add_argument("--compare-backends", action="store_true")
    args = parser.parse_args()
    if args.compare_backends:
        return compare_backends(args.isolation)
    judged = judge_corpus(args.isolation)
    for j in judged:
        reasons = j.result.integrity.reasons
        strong = [r.code for r in reasons if r.severity != "hint"]
        hints = [r.code for r in reasons if r.severity == "hint"]
        codes = ", ".join(strong) + (f" ({', '.join(hints)})" if hints else "")
        mark = "ok " if j.ok else "BAD"
        flag = "FLAGGED" if j.flagged else "-      "
        print(
            f"{mark} {j.case.name:38} {flag} credited {j.pass_rate:4.2f} "
            f"reported {j.reported_pass_rate:4.2f}  {codes or '-'}"
        )
    print()
    for label, (count, total) in summary(judged).items():
        print(f"{label + ':':48} {count}/{total} ({100 * count / max(total, 1):.0f}%)")
    return 0 if all(j.ok for j in judged) else 1


if __name__ == "__main__":
    sys.exit(main())
