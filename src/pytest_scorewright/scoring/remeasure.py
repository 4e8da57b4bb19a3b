"""A claimed speedup measured twice: a candidate that would be credited more than
:data:`REMEASURE_ABOVE` times the reference's speed has its benchmarked visible tests run
again in a fresh candidate process, side by side with the reference's run of the same tests,
and each test is credited at the geometric mean of its two ratios where they agree, else at
the lower. One lucky measurement (a quiet moment, a cache warmed by chance) then cannot
carry a candidate into first place; a test that
does not pass or benchmark again keeps no speed. The reference runs beside it so that the
second ratio is taken under one load: a busy machine during the re-measurement slows both,
and an honest program keeps its speedup (measured alone, it lost half of it to a load spike
of the tests around it)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping

from pytest_scorewright.integrity.verdict import RunVerdict
from pytest_scorewright.result import Benchmark, ScoreResult
from pytest_scorewright.scoring.runs import Suite

#: The speedup above which a candidate's speed is measured again.
REMEASURE_ABOVE = 1.5
#: Two measurements of one test whose medians are within this factor of each other agree:
#: credited at their geometric mean; further apart, at the slower.
AGREE = 1.5


def remeasured_suite(result: ScoreResult, visible: Suite) -> Suite | None:
    """The visible suite narrowed to its benchmarked tests, where ``result`` claims a
    speedup to check; else None."""
    speedup = result.signal("speedup")
    if speedup is None or speedup <= REMEASURE_ABOVE or result.integrity.rejected:
        return None
    timed = {t.nodeid for t in result.tests if t.benchmark is not None and not t.heldout}
    if not timed:
        return None
    return dataclasses.replace(
        visible,
        expected=[e for e in visible.expected if e[0] in timed],
        select=sorted(timed),
    )


def combine_measurements(
    first: RunVerdict,
    again: RunVerdict,
    reference_again: RunVerdict | None = None,
    reference: Mapping[tuple[bool, str], float] | None = None,
) -> None:
    """Each benchmarked record of ``first`` takes its two measurements combined
    (:func:`_combined`); one
    that did not pass and benchmark again loses its figures (no speed is credited). With
    ``reference_again`` (the reference's run beside ``again``) and ``reference`` (its medians
    when the evaluator was prepared), the second medians are first put in the prepared
    reference's terms: scaled by how much slower the reference ran beside them."""
    second = {r.nodeid: r for r in again.records}
    scale = load_scale(reference_again, reference)
    records = []
    for record in first.records:
        if record.benchmark is not None:
            other = second.get(record.nodeid)
            figures = other.benchmark if other is not None and other.passed else None
            if figures is not None:
                figures = dataclasses.replace(
                    figures, median_s=figures.median_s * scale, first_s=figures.first_s * scale
                )
                figures = _combined(record.benchmark, figures)
            record = dataclasses.replace(record, benchmark=figures)
        records.append(record)
    first.records = records


def load_scale(
    beside: RunVerdict | None, reference: Mapping[tuple[bool, str], float] | None
) -> float:
    """How much faster the machine ran the reference when it was prepared than beside the
    re-measurement: the geometric mean, over the tests the reference benchmarked both times,
    of prepared median / median beside; 1.0 with nothing to compare. One figure for the whole
    run, not one per test: load is the machine's, and a short test's own noise (15 rounds of
    fresh arguments) would otherwise enter each second figure twice."""
    if beside is None or not reference:
        return 1.0
    logs = [
        math.log(reference[(False, r.nodeid)] / r.benchmark.median_s)
        for r in beside.records
        if r.passed
        and r.benchmark is not None
        and r.benchmark.median_s > 0
        and reference.get((False, r.nodeid), 0.0) > 0
    ]
    return math.exp(sum(logs) / len(logs)) if logs else 1.0


def _combined(first: Benchmark, second: Benchmark) -> Benchmark:
    """The two medians combined: where they agree within :data:`AGREE` of each other, their
    geometric mean (two honest measurements of one program differ by noise, and the slower
    of two noisy figures would credit honest work below its speed every time: -20 to -30%
    against pytest-benchmark); where they do not, the slower (one lucky measurement, a quiet
    moment, a cache warmed by chance). The first call is the faster of the two: where every
    round had the same arguments, results/measure.py ``credited_median`` reads the first call
    as evidence of a cache, which pays for its answer at the first call of every fresh
    process, while a fast function's first call is slow only now and then (a process started
    moments ago, preempted on a busy machine: 1.2 ms for a 30 us function under load, which
    read as a cache). The speed credited is never above what the faster measurement's
    rounds show."""
    slower, faster = (second, first) if second.median_s > first.median_s else (first, second)
    combined = slower
    if faster.median_s > 0 and slower.median_s <= faster.median_s * AGREE:
        combined = dataclasses.replace(
            slower, median_s=math.sqrt(slower.median_s * faster.median_s)
        )
    if first.first_s > 0 and second.first_s > 0:
        return dataclasses.replace(combined, first_s=min(first.first_s, second.first_s))
    return combined
