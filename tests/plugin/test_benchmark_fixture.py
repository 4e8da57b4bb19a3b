"""The benchmark fixture in plugin mode: pytest-benchmark's calling convention, our clock, the
figures in the result file; and pytest-benchmark's own fixture when that plugin is loaded."""

from __future__ import annotations

import pytest

from pytest_scorewright.child.test_process import bench
from tests.conftest import RunScored

# Tests written for pytest-benchmark, as they are: they must run unchanged on our fixture.
PYTEST_BENCHMARK_STYLE = """
import pytest


def work(n):
    return sum(i * i for i in range(n))


def test_plain(benchmark):
    assert benchmark(work, 2000) == work(2000)


def test_keywords(benchmark):
    assert benchmark(work, n=10) == 285


@pytest.mark.benchmark(max_time=0.05, min_rounds=3)
def test_pedantic(benchmark):
    seen = []

    def setup():
        seen.append(1)
        return (50,), {}

    result = benchmark.pedantic(work, setup=setup, rounds=7, warmup_rounds=2)
    assert result == work(50)
    assert len(seen) == 9
    benchmark.extra_info["note"] = "kept for pytest-benchmark's report"
"""

# Our plugin without pytest-benchmark, which the dev extra installs (and pytest autoloads):
# tests/conftest.py leaves it out of every pytester run already; said again here, as these
# tests are about it.
WITHOUT_PYTEST_BENCHMARK = ("-p", "no:benchmark")


def test_tests_written_for_pytest_benchmark_run_unchanged_and_their_figures_reach_the_result(
    pytester: pytest.Pytester, run_scored: RunScored
) -> None:
    pytester.makepyfile(test_speed=PYTEST_BENCHMARK_STYLE)
    scored = run_scored(*WITHOUT_PYTEST_BENCHMARK)
    scored.run.assert_outcomes(passed=3)
    plain = scored.test("test_plain")["benchmark"]
    assert plain["rounds"] >= bench.MIN_ROUNDS
    assert 0 < plain["min_s"] <= plain["median_s"]
    assert plain["overhead_s"] == 0.0  # the function runs in this process: nothing to subtract
    pedantic = scored.test("test_pedantic")["benchmark"]
    assert (pedantic["rounds"], pedantic["iterations"]) == (7, 1)
    medians = [scored.test(t)["benchmark"]["median_s"] for t in ("plain", "keywords", "pedantic")]
    product = medians[0] * medians[1] * medians[2]
    assert scored.need("bench_median_s") == pytest.approx(product ** (1 / 3), rel=1e-6)
    assert scored.signal("speedup") is None  # no reference in plugin mode


def test_the_same_tests_run_on_pytest_benchmarks_own_fixture_when_it_is_loaded(
    pytester: pytest.Pytester, run_scored: RunScored, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("pytest_benchmark")  # the dev extra has it: pytest loads it by itself
    monkeypatch.delenv("PYTEST_ADDOPTS")
    # It turns itself off in an xdist worker (this test may run in one, under `pytest -n 2`).
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    pytester.makepyfile(
        test_speed=PYTEST_BENCHMARK_STYLE + "\n\ndef test_whose_fixture(benchmark):\n"
        "    assert type(benchmark).__module__ == 'pytest_benchmark.fixture'\n"
        "    benchmark(work, 10)\n"
    )
    scored = run_scored("--benchmark-max-time=0.02", "--benchmark-quiet")
    scored.run.assert_outcomes(passed=4)
    # Its figures stay pytest-benchmark's: nothing of ours is claimed for them.
    assert all("benchmark" not in t for t in scored.data["tests"])
    assert scored.signal("bench_median_s") is None


def test_a_timer_replaced_after_the_plugin_loaded_does_not_change_the_benchmark_clock(
    pytester: pytest.Pytester, run_scored: RunScored
) -> None:
    pytester.makepyfile(
        test_cheat="""
        import time

        time.perf_counter = lambda: 0.0  # what a candidate imported by the tests could do


        def slow():
            end = time.monotonic() + 0.002
            while time.monotonic() < end:
                pass


        def test_slow(benchmark):
            benchmark.pedantic(slow, rounds=5)
        """
    )
    scored = run_scored(*WITHOUT_PYTEST_BENCHMARK)
    scored.run.assert_outcomes(passed=1)
    assert scored.test("test_slow")["benchmark"]["min_s"] >= 0.0019


def test_the_fixture_times_once_a_test_as_pytest_benchmarks_does(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        """
        import pytest
        from pytest_scorewright.child.test_process.bench import FixtureAlreadyUsed


        def test_twice(benchmark):
            benchmark.pedantic(len, args=([1],), rounds=2)
            with pytest.raises(FixtureAlreadyUsed, match="pedantic"):
                benchmark(len, [1])


        @pytest.mark.parametrize(
            "kwargs, message",
            [
                ({"rounds": 0}, "rounds"),
                ({"iterations": 0}, "iterations"),
                ({"warmup_rounds": -1}, "warmup_rounds"),
                ({"iterations": 2, "setup": lambda: None}, "setup"),
            ],
        )
        def test_pedantic_arguments(benchmark, kwargs, message):
            with pytest.raises(ValueError, match=message):
                benchmark.pedantic(len, args=([1],), **kwargs)


        @pytest.mark.benchmark(timers=1)
        def test_unknown_marker_key(benchmark):
            pass
        """
    )
    result = pytester.runpytest(*WITHOUT_PYTEST_BENCHMARK, "-p", "no:cacheprovider")
    result.assert_outcomes(passed=5, errors=1)
    result.stdout.fnmatch_lines(["*benchmark mark can't have 'timers' keyword argument*"])


def test_the_benchmark_marker_is_registered_for_strict_markers(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.benchmark(max_time=0.01)
        def test_marked(benchmark):
            benchmark(len, "abc")
        """
    )
    result = pytester.runpytest(*WITHOUT_PYTEST_BENCHMARK, "--strict-markers")
    result.assert_outcomes(passed=1)


def test_figures_of_a_benchmark_under_xdist_reach_the_controllers_result(
    pytester: pytest.Pytester, run_scored: RunScored
) -> None:
    pytester.makepyfile(test_speed=PYTEST_BENCHMARK_STYLE)
    scored = run_scored(*WITHOUT_PYTEST_BENCHMARK, "-n", "2", subprocess=True)
    scored.run.assert_outcomes(passed=3)
    assert all(scored.test(t)["benchmark"]["rounds"] >= 3 for t in ("plain", "pedantic"))
    assert scored.need("bench_median_s") > 0


def test_a_slow_function_gets_fewer_rounds_not_a_timeout(
    pytester: pytest.Pytester, run_scored: RunScored
) -> None:
    pytester.makepyfile(
        """
        import time
        import pytest

        @pytest.mark.benchmark(max_time=0.02, min_rounds=50)
        def test_slow(benchmark):
            benchmark(time.sleep, 0.03)
        """
    )
    scored = run_scored(*WITHOUT_PYTEST_BENCHMARK)
    figures = scored.test("test_slow")["benchmark"]
    # One timed round passes HARD_STOP * max_time = 0.08 s after three: never 50 rounds.
    assert 1 <= figures["rounds"] <= 3
    assert figures["median_s"] >= 0.03


def test_statistics_of_per_call_times() -> None:
    stats = bench.summarize([3.0, 1.0, 2.0, 4.0, 5.0], 2, total_s=30.0, overhead_s=0.5)
    assert stats["rounds"] == 5
    assert (stats["median_s"], stats["min_s"], stats["iqr_s"]) == (3.0, 1.0, 2.0)
    assert stats["mean_s"] == 3.0
    assert stats["iterations"] == 2
    single = bench.summarize([0.25], 1, total_s=0.25, overhead_s=0.0)
    assert (single["iqr_s"], single["stdev_s"]) == (0.0, 0.0)
