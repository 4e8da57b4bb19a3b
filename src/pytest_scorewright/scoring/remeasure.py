"""A claimed speedup measured twice: a candidate that would be credited more than
:data:`REMEASURE_ABOVE` times the reference's speed has its benchmarked visible tests run
again in a fresh candidate process, and each test is credited at the slower of its two
medians. One lucky measurement (a quiet moment, a cache warmed by chance) then cannot carry a
candidate into first place; a test that does not pass or benchmark again keeps no speed."""

from __future__ import annotations

import dataclasses

from pytest_scorewright.integrity.verdict import RunVerdict
from pytest_scorewright.result import ScoreResult
from pytest_scorewright.scoring.runs import Suite

#: The speedup above which a candidate's speed is measured again.
REMEASURE_ABOVE = 1.5


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


def keep_the_slower(first: RunVerdict, again: RunVerdict) -> None:
    """Each benchmarked record of ``first`` takes the slower of its two measurements; one
    that did not pass and benchmark again loses its figures (no speed is credited)."""
    second = {r.nodeid: r for r in again.records}
    records = []
    for record in first.records:
        if record.benchmark is not None:
            other = second.get(record.nodeid)
            figures = other.benchmark if other is not None and other.passed else None
            if figures is None or figures.median_s > record.benchmark.median_s:
                record = dataclasses.replace(record, benchmark=figures)
        records.append(record)
    first.records = records
