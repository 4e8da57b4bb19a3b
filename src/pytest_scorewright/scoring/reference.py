"""Everything learned from the reference solution, once, as one frozen object.

The reference must pass both suites (the tests it skips or xfails are not applicable; as a
baseline, the tests it fails are not applicable either); its timing is the baseline, its
anchored values the expectations, what it did in each run no evidence against a candidate,
its benchmarks the baseline of ``speedup`` and its submissions what a candidate may submit.
With ``isolation="auto"`` its runs also decide the isolation.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Literal

from pytest_scorewright.errors import ConfigError
from pytest_scorewright.integrity.memorised import SuiteLiterals, suite_literals
from pytest_scorewright.integrity.reasons import Baseline
from pytest_scorewright.integrity.relative import TrustedRun
from pytest_scorewright.integrity.static_scan import SourceScan, reference_scan
from pytest_scorewright.integrity.verdict import RunVerdict
from pytest_scorewright.protocol.wire import Anchor
from pytest_scorewright.result import TestRecord
from pytest_scorewright.sandbox.workspace import CopyReport
from pytest_scorewright.scoring.applicable import INAPPLICABLE, ReferenceOutcomes, flaky_tests
from pytest_scorewright.scoring.objectives import ObjectiveSet, Submitted
from pytest_scorewright.scoring.runs import Judged, Suite

#: The ``isolation`` choices (docs/isolation.md).
Isolation = Literal["auto", "process", "in-process"]
ISOLATIONS: tuple[Isolation, ...] = ("auto", "process", "in-process")
#: Runs the reference's suites (``isolated``: the candidate apart) with the whole budget each.
#: More runs of the reference when its first fails a test: a test that passes in one of them
#: is flaky, not a reason to refuse the suite.
FLAKY_RERUNS = 2
RunReference = Callable[[Sequence[Suite], bool], tuple[list[Judged], CopyReport]]


@dataclasses.dataclass(frozen=True)
class Reference:
    """What the Evaluator knows from its reference (or, without one, from nothing).

    Example::

        reference = learn(run, suites, path, isolation="auto", baseline=False, ...)
        reference.isolated, reference.anchors["visible"], reference.bench
    """

    #: Whether candidates run apart from the tests (docs/isolation.md), and why.
    isolated: bool
    isolation_why: str
    present: bool = False
    baseline: Baseline | None = None
    #: Per suite, per test: the reference's anchored values.
    anchors: Mapping[str, Mapping[str, list[Anchor]]] = dataclasses.field(default_factory=dict)
    #: What the reference did in each suite's run: no evidence against any candidate.
    trusted: Mapping[str, TrustedRun] = dataclasses.field(default_factory=dict)
    source: SourceScan | None = None
    config: tuple[str, ...] = ()
    #: Per suite: the tests the reference says do not apply (scoring/applicable.py).
    applicability: Mapping[str, ReferenceOutcomes] = dataclasses.field(default_factory=dict)
    #: The reference's benchmark medians, the baseline of ``speedup``.
    bench: Mapping[tuple[bool, str], float] = dataclasses.field(default_factory=dict)
    #: Of those with the same arguments every round: median over the first call's time.
    bench_warm: Mapping[tuple[bool, str], float] = dataclasses.field(default_factory=dict)
    #: How many values the reference submitted, by (suite, test, name).
    submission_counts: Mapping[tuple[str, str, str], int] = dataclasses.field(default_factory=dict)
    #: Each objective's value for the reference.
    objectives: Mapping[str, float] = dataclasses.field(default_factory=dict)
    #: Messages the reference's run of each suite sent (a candidate's cap follows from it).
    messages: Mapping[str, int] = dataclasses.field(default_factory=dict)
    #: The suite's literals, for the memorised-inputs evidence.
    literals: SuiteLiterals | None = None
    #: Each test's wall and CPU seconds with the reference, by (suite, node id): its own
    #: limits follow from them (Limits.calibrated).
    test_times: Mapping[tuple[str, str], tuple[float | None, float | None]] = dataclasses.field(
        default_factory=dict
    )

    def failures(self) -> int:
        """Tests the reference fails (as a baseline: not applicable to any candidate)."""
        return sum(a.baseline_failures for a in self.applicability.values())


def learn(
    run: RunReference,
    suites: Sequence[Suite],
    path: Path | None,
    *,
    tests: Path,
    isolation: Isolation,
    baseline: bool,
    objectives: ObjectiveSet,
    repeats: int = 1,
    measured: Collection[str] = (),
) -> Reference:
    """Run the reference (``path``) on ``suites`` and keep what it shows; without one, only
    the isolation (``auto`` is then in process) and the suite's literals. ``measured``: tests
    the reference is known to fail that candidates are scored on all the same."""
    if path is None:
        why = "asked for" if isolation != "auto" else "no reference to try the suite apart with"
        return Reference(
            isolated=isolation == "process",
            isolation_why=why,
            literals=suite_literals(tests, None),
        )
    trial = _Trial(
        run, suites, isolation=isolation, baseline=baseline, repeats=repeats, measured=measured
    )
    chosen, isolated, why = trial.choose()
    return _take(chosen, path, tests, isolated, why, objectives)


def witnessed(reference: Reference, names: Sequence[str], judged: Sequence[Judged]) -> Reference:
    """``reference`` with the gold's runs (``judged``, one per suite ``names`` names) as
    trusted evidence where the reference's runs gave none (TrustedRun.witnessed)."""
    trusted = dict(reference.trusted)
    for name, (verdict, _) in zip(names, judged, strict=True):
        gold = TrustedRun.of(verdict)
        trusted[name] = trusted[name].witnessed(gold) if name in trusted else gold
    return dataclasses.replace(reference, trusted=trusted)


@dataclasses.dataclass
class _Trial:
    run: RunReference
    suites: Sequence[Suite]
    isolation: Isolation
    baseline: bool
    #: Runs of each suite: a test whose outcome differs between them is flaky.
    repeats: int = 1
    #: Tests the reference is known to fail, scored anyway (applicable.ReferenceOutcomes).
    measured: Collection[str] = ()

    def choose(self) -> tuple[_ReferenceRuns, bool, str]:
        """The reference's runs to learn from, whether apart, and why. Apart when asked, or
        (``auto``) when the reference runs every test apart as in process (it passes them;
        as a baseline, it fails the same ones)."""
        if self.isolation == "in-process":
            return self._usable(isolated=False), False, "asked for"
        in_process = None
        if self.baseline and self.isolation == "auto":
            in_process = self._usable(isolated=False)
        apart = self._runs(isolated=True)
        problem = apart.problem
        if problem is None and in_process is not None:
            problem = apart.differs_from(in_process)
        if problem is None:
            return apart, True, "the reference passes every test with the candidate apart"
        if self.isolation == "process":
            raise ConfigError(
                f"the reference does not pass its tests with isolation by process "
                f"({problem}); use isolation 'auto' or 'in-process'"
            )
        why = f"the reference fails with the candidate apart: {problem}"
        return in_process or self._usable(isolated=False), False, why

    def _usable(self, *, isolated: bool) -> _ReferenceRuns:
        found = self._runs(isolated=isolated)
        if found.problem is not None:
            raise ConfigError(f"the reference does not pass its own {found.problem}; {found.fix}")
        return found

    def _runs(self, *, isolated: bool) -> _ReferenceRuns:
        """The reference's runs on both suites, with what the tests it runs say about
        applicability, and what keeps it from passing, if anything."""
        # A trial apart stops at its first failure (-x): it then only decides the isolation,
        # and a suite that needs the candidate in process is told so at once. Not as a
        # baseline: there failures are expected, and the runs apart are compared whole.
        trial = ("-x",) if isolated and self.isolation == "auto" and not self.baseline else ()
        suites = [dataclasses.replace(s, extra_args=trial) for s in self.suites]
        judged, copied = self.run(suites, isolated)
        again = [self.run(suites, isolated)[0] for _ in range(self.repeats - 1)]
        if not again and not self.baseline and self._fails(judged):
            # A test the reference fails is run again before the suite is refused: one that
            # then passes is flaky (a timing-sensitive test on a loaded machine), set aside
            # as not applicable; one that fails every time refuses the suite, as before.
            again = [self.run(suites, isolated)[0] for _ in range(FLAKY_RERUNS)]
        found = _ReferenceRuns(runs=[], copied=copied)
        for index, (suite, (verdict, observed)) in enumerate(zip(suites, judged, strict=True)):
            flaky = flaky_tests([verdict.records, *(run[index][0].records for run in again)])
            found.add(
                suite.name,
                verdict,
                len(observed.messages),
                baseline=self.baseline,
                flaky=flaky,
                measured=self.measured,
            )
        return found

    def _fails(self, judged: Sequence[Judged]) -> bool:
        return any(
            not r.passed and r.outcome not in INAPPLICABLE and r.nodeid not in self.measured
            for verdict, _ in judged
            for r in verdict.records
        )


@dataclasses.dataclass
class _ReferenceRuns:
    """The reference's runs of both suites, as judged, and whether they make it usable."""

    runs: list[tuple[str, RunVerdict]]
    copied: CopyReport
    applicability: dict[str, ReferenceOutcomes] = dataclasses.field(default_factory=dict)
    messages: dict[str, int] = dataclasses.field(default_factory=dict)
    #: What keeps it from being the reference ("visible tests (...)"), and the fix.
    problem: str | None = None
    fix: str = ""

    def add(
        self,
        name: str,
        verdict: RunVerdict,
        messages: int,
        *,
        baseline: bool,
        flaky: Mapping[str, str] | None = None,
        measured: Collection[str] = (),
    ) -> None:
        self.messages[name] = messages
        self.runs.append((name, verdict))
        odd_stream = [r for r in verdict.reasons if r.severity == "tamper"]
        if odd_stream:
            # Our child code never does this on its own: a suite that makes it happen would
            # hide the same evidence from every candidate, so it is refused, loudly.
            raise ConfigError(
                f"the reference's {name} run shows {odd_stream[0].code} "
                f"({odd_stream[0].detail}): scorewright cannot judge candidates on this "
                "suite; report it with the suite"
            )
        applicability = ReferenceOutcomes.of(
            verdict.records, baseline=baseline, flaky=flaky, measured=measured
        )
        self.applicability[name] = applicability
        failing = applicability.failing
        odd = [a.not_plain for v in verdict.anchors.values() for a in v if a.not_plain]
        if self.problem is None and (verdict.error or failing or odd):
            problem = verdict.error or (
                _reference_failure(failing)
                if failing
                else f"it anchors a {odd[0]}, not a plain value"
            )
            fix = "fix the reference or the tests"
            if verdict.ending == "timeout":
                fix = "give the whole suite a longer budget (--timeout)"
            elif failing:
                fix += ", or score against it as a baseline (--reference-baseline)"
            self.problem, self.fix = f"{name} tests ({problem})", fix

    def differs_from(self, other: _ReferenceRuns) -> str | None:
        """Where a baseline taken apart differs from the one taken in process."""
        for name, mine in self.applicability.items():
            theirs = other.applicability.get(name)
            if theirs is None or set(mine.excluded) == set(theirs.excluded):
                continue
            extra = sorted(set(mine.excluded) - set(theirs.excluded))
            first = extra[0] if extra else sorted(set(theirs.excluded) - set(mine.excluded))[0]
            return f"{name} tests: {first} does not fare apart as it does in process"
        return None


def _take(
    runs: _ReferenceRuns,
    path: Path,
    tests: Path,
    isolated: bool,
    why: str,
    objectives: ObjectiveSet,
) -> Reference:
    source = reference_scan(path)
    baseline = Baseline(collected_s=None)
    bench: dict[tuple[bool, str], float] = {}
    warm: dict[tuple[bool, str], float] = {}
    counts: dict[tuple[str, str, str], int] = {}
    submitted = []
    for name, verdict in runs.runs:
        if name == "visible":
            baseline = Baseline(
                collected_s=verdict.timing.collected_s,
                collected_cpu_s=verdict.timing.collected_cpu_s,
            )
        heldout = {r.nodeid: r.heldout for r in verdict.records}
        for record in verdict.records:
            if record.benchmark is not None and record.passed:
                bench[(record.heldout, record.nodeid)] = record.benchmark.median_s
                if record.benchmark.first_s > 0:
                    warm[(record.heldout, record.nodeid)] = (
                        record.benchmark.median_s / record.benchmark.first_s
                    )
        for s in verdict.submissions:
            key = (name, s.test, s.name)
            counts[key] = counts.get(key, 0) + 1
            submitted.append(Submitted(s.test, heldout.get(s.test, False), s.name, s.value))
    return Reference(
        isolated=isolated,
        isolation_why=why,
        present=True,
        baseline=baseline,
        anchors={name: verdict.anchors for name, verdict in runs.runs},
        trusted={name: TrustedRun.of(verdict) for name, verdict in runs.runs},
        source=source,
        config=tuple(runs.copied.config_files),
        applicability=dict(runs.applicability),
        bench=bench,
        bench_warm=warm,
        submission_counts=counts,
        objectives=_objective_values(objectives, submitted, runs.runs),
        messages=dict(runs.messages),
        literals=suite_literals(tests, source),
        test_times={
            (name, r.nodeid): (r.duration_s, r.cpu_s)
            for name, v in runs.runs
            for r in v.records
            if r.duration_s is not None
        },
    )


def _objective_values(
    objectives: ObjectiveSet, submitted: list[Submitted], runs: Sequence[tuple[str, RunVerdict]]
) -> dict[str, float]:
    """Each objective's value for the reference: one that cannot score it is a ConfigError."""
    if not objectives:
        return {}
    records = [r for _, verdict in runs for r in verdict.records]
    _, scored = objectives.score(submitted, records)
    values = {}
    for found in scored:
        if found.value is None:
            raise ConfigError(
                f"with the reference, objective {found.name!r} has no value: {found.error}; "
                "check the name the tests submit under and the objective function"
            )
        values[found.name] = found.value
    return values


def _reference_failure(failing: Sequence[TestRecord]) -> str:
    first = failing[0]
    text = f"{len(failing)} test(s) fail, first {first.nodeid}: {first.outcome}"
    if first.message:
        text += f": {first.message.splitlines()[0][:200]}"
    if first.outcome == "timeout":
        text += "; a slow test needs a longer --test-timeout"
    elif "can't start new thread" in (first.message or ""):
        text += "; a test that starts many threads needs a higher --processes"
    return text
