"""A claimed speedup measured twice (scoring/remeasure.py): credited at no more than the
faster measurement gives, at no more than the slower gives where the two disagree, and at
their geometric mean where they agree (the slower of two honest, noisy figures would
under-credit honest work every time), whatever the two measurements' figures."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_scorewright.integrity.verdict import RunVerdict
from pytest_scorewright.result import Benchmark, TestRecord
from pytest_scorewright.results.measure import benchmark_signals, credited_median
from pytest_scorewright.scoring.remeasure import AGREE, combine_measurements, load_scale

TESTS = ("t.py::test_fixed", "t.py::test_fresh")
seconds = st.floats(min_value=1e-6, max_value=1.0)


@st.composite
def figures(draw: st.DrawFn, fresh: bool) -> Benchmark:
    median = draw(seconds)
    # A same-argument test's first call: anywhere from a cache's free hit to a slow start.
    first = 0.0 if fresh else median * draw(st.floats(min_value=0.01, max_value=100.0))
    return Benchmark(median_s=median, min_s=median, iqr_s=0.0, rounds=5, first_s=first)


def _run(measured: list[Benchmark]) -> RunVerdict:
    return RunVerdict(
        records=[
            TestRecord(nodeid, "passed", "call", False, 0.1, benchmark=figures)
            for nodeid, figures in zip(TESTS, measured, strict=True)
        ],
        error=None,
    )


def _speedup(run: RunVerdict, reference: dict[tuple[bool, str], float], warm: float) -> float:
    warmth = {key: warm for key in reference}
    (_, signal) = benchmark_signals(run.records, reference, warmth)
    return signal.value


#: One measurement of the two tests: a same-argument one and a fresh-argument one.
measured = st.tuples(figures(fresh=False), figures(fresh=True))
#: The reference's prepared medians of the two tests.
prepared = st.tuples(seconds, seconds).map(
    lambda pair: {(False, nodeid): median for nodeid, median in zip(TESTS, pair, strict=True)}
)
warmth = st.floats(min_value=0.01, max_value=1.0)

Measured = tuple[Benchmark, Benchmark]
Prepared = dict[tuple[bool, str], float]


def _rounds_only(measurement: Measured | list[Benchmark]) -> RunVerdict:
    """The measurement without its first calls: what its rounds alone show."""
    return _run([dataclasses.replace(f, first_s=0.0) for f in measurement])


def _agree(a: Benchmark, b: Benchmark) -> bool:
    return max(a.median_s, b.median_s) <= min(a.median_s, b.median_s) * AGREE


@given(first=measured, again=measured)
def test_each_test_is_credited_no_faster_than_its_faster_measurement(
    first: Measured, again: Measured
) -> None:
    kept = _run(list(first))
    combine_measurements(kept, _run(list(again)))
    for record, a, b in zip(kept.records, first, again, strict=True):
        assert record.benchmark is not None
        median = record.benchmark.median_s
        assert median >= min(a.median_s, b.median_s) * (1 - 1e-9)
        if not _agree(a, b):  # one lucky measurement: the slower one's rounds are credited
            assert median == max(a.median_s, b.median_s)


@given(first=measured, factor=st.floats(min_value=1.0, max_value=AGREE))
def test_two_agreeing_measurements_are_credited_at_their_geometric_mean(
    first: Measured, factor: float
) -> None:
    again = tuple(dataclasses.replace(f, median_s=f.median_s * factor) for f in first)
    kept = _run(list(first))
    combine_measurements(kept, _run(list(again)))
    for record, before in zip(kept.records, first, strict=True):
        assert record.benchmark is not None
        expected = before.median_s * factor**0.5
        assert record.benchmark.median_s == pytest.approx(expected, rel=1e-9)


@given(first=measured, again=measured, warm=warmth)
def test_a_first_call_slow_in_both_processes_still_reads_as_a_cache(
    first: Measured, again: Measured, warm: float
) -> None:
    # Per test: the median credited (a cache's first call counted) of the two measurements
    # combined is never faster than the faster of the two credits alone. (Not stated on the
    # aggregate: a lower median over tests of per-test geometric means can exceed both
    # measurements' own lower medians, each dragged down by a different test.)
    slowest = max(first[0].first_s, again[0].first_s)
    both = [(dataclasses.replace(m[0], first_s=slowest), m[1]) for m in (first, again)]
    kept = _run(list(both[0]))
    combine_measurements(kept, _run(list(both[1])))
    for index, record in enumerate(kept.records):
        assert record.benchmark is not None
        combined = credited_median(record.benchmark, warm)
        alone = [credited_median(m[index], warm) for m in both]
        assert combined >= min(alone) * (1 - 1e-9)


@given(first=measured, again=measured, beside=measured, medians=prepared)
def test_a_re_measurement_beside_the_reference_never_credits_a_test_past_its_faster_rounds(
    first: Measured, again: Measured, beside: Measured, medians: Prepared
) -> None:
    scale = load_scale(_run(list(beside)), medians)
    kept = _run(list(first))
    combine_measurements(kept, _run(list(again)), _run(list(beside)), medians)
    for record, a, b in zip(kept.records, first, again, strict=True):
        assert record.benchmark is not None
        assert record.benchmark.median_s >= min(a.median_s, b.median_s * scale) * (1 - 1e-9)


def test_one_load_figure_scales_every_test_of_the_re_measurement() -> None:
    # The machine ran the reference twice as slow beside the re-measurement on one test and
    # eight times on the other: one scale for both, their geometric mean (1/4).
    medians = {(False, TESTS[0]): 1e-3, (False, TESTS[1]): 1e-3}
    beside = [
        Benchmark(median_s=2e-3, min_s=2e-3, iqr_s=0.0, rounds=5),
        Benchmark(median_s=8e-3, min_s=8e-3, iqr_s=0.0, rounds=5),
    ]
    assert load_scale(_run(beside), medians) == pytest.approx(0.25)
    assert load_scale(None, medians) == 1.0
