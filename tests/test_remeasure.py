"""A claimed speedup measured twice is credited at no more than either measurement gives
(scoring/remeasure.py), whatever the two measurements' figures."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pytest_scorewright.integrity.verdict import RunVerdict
from pytest_scorewright.result import Benchmark, TestRecord
from pytest_scorewright.results.measure import benchmark_signals
from pytest_scorewright.scoring.remeasure import keep_the_slower

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


@given(
    first=st.tuples(figures(fresh=False), figures(fresh=True)),
    again=st.tuples(figures(fresh=False), figures(fresh=True)),
    reference=st.tuples(seconds, seconds),
    warm=st.floats(min_value=0.01, max_value=1.0),
)
def test_the_credited_speedup_is_never_above_either_measurements(
    first: tuple[Benchmark, Benchmark],
    again: tuple[Benchmark, Benchmark],
    reference: tuple[float, float],
    warm: float,
) -> None:
    medians = {(False, nodeid): median for nodeid, median in zip(TESTS, reference, strict=True)}
    alone = [_speedup(_run(list(m)), medians, warm) for m in (first, again)]
    kept = _run(list(first))
    keep_the_slower(kept, _run(list(again)))
    assert _speedup(kept, medians, warm) <= min(alone) * (1 + 1e-9)


def test_a_slower_median_does_not_bring_a_faster_first_call_with_it() -> None:
    # The first measurement's first call was slow (a cache would have served the rest),
    # the second's rounds slightly slower but its first call fast: neither alone credits
    # the second's rounds against the first's first call.
    medians = {(False, TESTS[0]): 1e-3, (False, TESTS[1]): 1e-3}
    fresh = Benchmark(median_s=1e-4, min_s=1e-4, iqr_s=0.0, rounds=5)
    cold = Benchmark(median_s=1e-5, min_s=1e-5, iqr_s=0.0, rounds=5, first_s=1e-3)
    warm = Benchmark(median_s=2e-5, min_s=2e-5, iqr_s=0.0, rounds=5, first_s=2e-5)
    claimed = _speedup(_run([cold, fresh]), medians, 1.0)
    kept = _run([cold, fresh])
    keep_the_slower(kept, _run([warm, fresh]))
    assert _speedup(kept, medians, 1.0) <= claimed
