"""Signals from test records, and the one builder of ScoreResults.

The plugin and the evaluator's trusted parent both end here, so a ScoreResult means the same
thing whichever produced it.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import functools
import math
import platform
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from pytest_scorewright._text import error_line
from pytest_scorewright._version import __version__
from pytest_scorewright.result import (
    Benchmark,
    CollectionError,
    Integrity,
    Mode,
    ObjectiveResult,
    Policy,
    Reason,
    ScoreResult,
    Signal,
    TestRecord,
)
from pytest_scorewright.results.bound import within_bound

#: Outcomes that mean the test body was never exercised.
NOT_EXECUTED = frozenset({"skipped", "not_run"})

#: Reference medians of benchmarked tests, by (held out, node id): the baseline of speedup.
BenchReference = Mapping[tuple[bool, str], float]
#: How much faster than its first call a candidate's same-argument rounds may be, beyond what
#: the reference's were, before the rounds are taken as served by a cache (credited_median).
COLD_SLACK = 4.0
#: Scores objectives from the records the policy left credited (scoring/objectives.py).
ObjectiveScorer = Callable[
    [Sequence[TestRecord]], tuple[Sequence[Signal], Sequence[ObjectiveResult]]
]


@dataclass(frozen=True)
class CoverageFigures:
    """Coverage of the code under test, as coverage.py's JSON report totals it."""

    covered_lines: int
    num_statements: int
    covered_branches: int | None = None
    num_branches: int | None = None

    @property
    def line(self) -> float | None:
        return self.covered_lines / self.num_statements if self.num_statements else None

    @property
    def branch(self) -> float | None:
        if not self.num_branches or self.covered_branches is None:
            return None
        return self.covered_branches / self.num_branches


#: Prefix of the signals that show what a rejected result's runs measured (no credit given).
AS_RUN = "as_run_"


def rate_signals(records: Sequence[TestRecord], *, as_run: bool = False) -> list[Signal]:
    """``tests_passed``, the pass rates (all, visible, held-out) and ``heldout_divergence``
    of applicable ``records``: credited passes, or (``as_run``, named ``as_run_*``) what the
    runs reported, credit aside, so a rejected result still says what it passed. The
    builtin fitness functions read the credited ones only."""
    prefix = AS_RUN if as_run else ""

    def passed(group: Sequence[TestRecord]) -> int:
        return sum((r.outcome == "passed") if as_run else r.passed for r in group)

    groups = {
        "pass_rate": records,
        "visible_pass_rate": [r for r in records if not r.heldout],
        "heldout_pass_rate": [r for r in records if r.heldout],
    }
    signals = [Signal(f"{prefix}tests_passed", float(passed(records)), "count", True)]
    rates = {name: passed(g) / len(g) if g else None for name, g in groups.items()}
    for name, value in rates.items():
        if value is not None:
            signals.append(Signal(f"{prefix}{name}", value, "ratio", True))
    visible, heldout = rates["visible_pass_rate"], rates["heldout_pass_rate"]
    if visible is not None and heldout is not None:
        signals.append(Signal(f"{prefix}heldout_divergence", visible - heldout, "ratio", False))
    return signals


def build_signals(
    records: Sequence[TestRecord],
    *,
    duration_s: float | None,
    coverage: CoverageFigures | None = None,
    counts_known: bool = True,
    bench_reference: BenchReference | None = None,
    bench_warm: BenchReference | None = None,
) -> list[Signal]:
    """Measure what can be measured; leave out what cannot (never a 0 in its place)."""
    signals: list[Signal] = []
    if counts_known:
        # Tests the reference skips or xfails (scoring/applicable.py) count nowhere but here.
        excluded = sum(not r.applicable for r in records)
        records = [r for r in records if r.applicable]
        signals.append(Signal("tests_total", float(len(records)), "count", None))
        if excluded:
            signals.append(Signal("tests_not_applicable", float(excluded), "count", None))
        signals += rate_signals(records)
        if any(not r.credited for r in records):
            signals += rate_signals(records, as_run=True)
    if duration_s is not None:
        signals.append(Signal("duration_s", round(duration_s, 6), "s", False))
    if coverage is not None:
        if coverage.line is not None:
            signals.append(Signal("line_coverage", coverage.line, "ratio", True))
        if coverage.branch is not None:
            signals.append(Signal("branch_coverage", coverage.branch, "ratio", True))
    signals += benchmark_signals(records, bench_reference, bench_warm)
    return signals


def _geometric_mean(values: Sequence[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def lower_median(values: Sequence[float]) -> float:
    """The median, and of an even count the lower of the two middle values: half the tests
    or more are at least this fast. Not a mean: one test whose rounds are free (a cache hit
    on the same arguments every round, a table made at import) would lift a geometric mean
    of otherwise equal tests 20-50x; here it lifts nothing unless most tests agree."""
    ordered = sorted(values)
    return ordered[(len(ordered) - 1) // 2]


def credited_median(benchmark: Benchmark, warm: float | None) -> float:
    """The median a candidate's speed is measured by. Where every round had the same
    arguments, never below its first call's time scaled by how much faster the reference's
    own later rounds were than its first call (``warm``), over :data:`COLD_SLACK`: a cache
    of answers serves the rounds after the first for free, and a cache hit is not the
    algorithm's speed."""
    if benchmark.first_s <= 0 or warm is None or not warm > 0:
        return benchmark.median_s
    return max(benchmark.median_s, benchmark.first_s * min(warm, 1.0) / COLD_SLACK)


def benchmark_signals(
    records: Sequence[TestRecord],
    reference: BenchReference | None = None,
    warm: BenchReference | None = None,
) -> list[Signal]:
    """``bench_median_s``: the geometric mean of the benchmarked tests' median call times;
    ``speedup``: the lower median of reference median / candidate median over the tests
    both benchmarked (:func:`lower_median`). Only tests that passed and were credited count:
    a wrong answer or a run whose outcomes cannot be trusted earns no speed."""
    timed = [r for r in records if r.benchmark is not None and r.passed]
    medians = [r.benchmark.median_s for r in timed if r.benchmark and r.benchmark.median_s > 0]
    signals: list[Signal] = []
    if medians:
        signals.append(Signal("bench_median_s", _geometric_mean(medians), "s", False))
    if reference is not None:
        ratios = [
            reference[(r.heldout, r.nodeid)]
            / credited_median(r.benchmark, (warm or {}).get((r.heldout, r.nodeid)))
            for r in timed
            if r.benchmark is not None
            and r.benchmark.median_s > 0
            and reference.get((r.heldout, r.nodeid), 0.0) > 0
        ]
        if ratios:
            signals.append(Signal("speedup", lower_median(ratios), "ratio", True))
    return signals


def heldout_reasons(records: Iterable[TestRecord]) -> list[Reason]:
    """Held-out tests that exist but never ran mean the divergence check measured nothing."""
    heldout = [r for r in records if r.heldout and r.applicable]
    executed = [r for r in heldout if r.outcome not in NOT_EXECUTED]
    if heldout and not executed:
        return [
            Reason(
                "heldout_not_executed",
                f"{len(heldout)} held-out test(s) collected but none executed",
                "hint",
            )
        ]
    return []


def build_result(
    records: Sequence[TestRecord],
    *,
    mode: Mode,
    duration_s: float | None,
    coverage: CoverageFigures | None = None,
    collection_errors: Sequence[CollectionError] = (),
    error: str | None = None,
    reasons: Sequence[Reason] = (),
    limits: Mapping[str, Any] | None = None,
    counts_known: bool | None = None,
    extra_signals: Sequence[Signal] = (),
    policy: Policy = "default",
    extra: Mapping[str, Any] | None = None,
    infrastructure: bool = False,
    bench_reference: BenchReference | None = None,
    bench_warm: BenchReference | None = None,
    objectives: ObjectiveScorer | None = None,
) -> ScoreResult:
    """Assemble a ScoreResult. ``error`` is a one-line reason the run is not a full measurement.

    In plugin mode a collection error leaves the number of tests unknown, so no count or rate
    is reported; the evaluator knows its expected tests from a trusted collection and passes
    ``counts_known=True``. ``policy`` decides what the reasons do (:func:`apply_policy`).
    Benchmark signals (``speedup`` against ``bench_reference``) and ``objectives`` are
    measured on the records as the policy left them: only credited tests count.
    """
    if counts_known is None:
        counts_known = not collection_errors
    if collection_errors and error is None:
        first = collection_errors[0]
        error = (
            f"{len(collection_errors)} collection error(s); first in {first.nodeid}: "
            f"{error_line(first.message) if first.message else 'unknown error'}"
        )
    all_reasons = [*heldout_reasons(records), *reasons]
    records, integrity = apply_policy(records, all_reasons, policy)
    objective_signals: Sequence[Signal] = ()
    objective_results: Sequence[ObjectiveResult] = ()
    if objectives is not None:
        objective_signals, objective_results = objectives(records)
    result = ScoreResult(
        ok=error is None,
        error=error,
        mode=mode,
        signals=(
            *build_signals(
                records,
                duration_s=duration_s,
                coverage=coverage,
                counts_known=counts_known,
                bench_reference=bench_reference,
                bench_warm=bench_warm,
            ),
            *extra_signals,
            *objective_signals,
        ),
        tests=tuple(records),
        integrity=integrity,
        environment=environment_stamp(),
        limits=limits,
        collection_errors=tuple(collection_errors),
        infrastructure=infrastructure and error is not None,
        extra=dict(extra or {}),
        objectives=tuple(objective_results),
    )
    return within_bound(result)


def apply_policy(
    records: Sequence[TestRecord], reasons: Sequence[Reason], policy: Policy
) -> tuple[list[TestRecord], Integrity]:
    """What the evidence does to the score.

    ``default``: tamper or gaming evidence rejects the result (fitness functions give it the
    reject value), and a rejected result credits no test: each record keeps the outcome its
    run reported, with ``credited`` false, so that no pass count or rate counts it and every
    signal agrees with the verdict. Hints change nothing. ``fail_closed``: as default, and
    hints reject too. ``warn_only``: everything is recorded, nothing changes. ``flagged`` is
    the same under every policy: a tamper or gaming reason is present.
    """
    severities = {r.severity for r in reasons}
    flagged = bool(severities & {"tamper", "gaming"})
    rejected = policy != "warn_only" and (flagged or (policy == "fail_closed" and bool(reasons)))
    if rejected:
        records = [dataclasses.replace(r, credited=False) for r in records]
    integrity = Integrity(flagged=flagged, reasons=tuple(reasons), rejected=rejected, policy=policy)
    return list(records), integrity


@functools.cache  # installed versions do not change under a running process; ~1 ms each
def _version_of(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def environment_stamp() -> dict[str, str]:
    return {
        "python": platform.python_version(),
        "implementation": sys.implementation.name,
        "platform": platform.platform(),
        "pytest": _version_of("pytest"),
        "pluggy": _version_of("pluggy"),
        "coverage": _version_of("coverage"),
        "pytest_scorewright": __version__,
        "timestamp": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
