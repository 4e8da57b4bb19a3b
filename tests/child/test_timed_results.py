"""Every timed result counts (child/test_process/timed_results.py, results/measure.py): speed
bought with
wrong, deferred or cached answers earns nothing, and an honestly faster program keeps its
speedup. The task (tests/speed_task) has a benchmark on fixed arguments and a ``pedantic``
one with fresh random arguments each round whose result the test does not assert."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_scorewright.evaluator import Evaluator
from pytest_scorewright.limits import Limits
from pytest_scorewright.result import Benchmark, ScoreResult
from pytest_scorewright.results.measure import credited_median, lower_median

pytestmark = pytest.mark.sandbox  # every test here forks real sandboxes

TASK = Path(__file__).resolve().parents[1] / "speed_task"
CANDIDATES = TASK / "candidates"
#: No gaming candidate is credited more than this: the round's target is 1.2 on a quiet
#: machine (benchmarks/speed_gaming.py); here, beside the rest of the suite under -n 2, the
#: reference scored against itself reads 0.7-1.3, so the bound leaves room for that noise
#: (uncaught, a cache read 4-40x).
MOST_FOR_GAMING = 1.6
#: How far one honest measurement may read above another of the same code beside the suite.
NOISE_BAND = 2.5


@pytest.fixture(scope="module")
def evaluator() -> Iterator[Evaluator]:
    with Evaluator(TASK / "tests", reference=TASK / "reference", dedupe=False) as made:
        yield made


@pytest.mark.parametrize(
    "name",
    [
        "burst_guess",
        "last_round_honest",
        "background_thread",
        "lazy_result",
        "approximate_unchecked",
    ],
)
def test_wrong_or_deferred_timed_answers_are_rejected(evaluator: Evaluator, name: str) -> None:
    result = evaluator.score(CANDIDATES / f"{name}.py")
    assert result.integrity.rejected, [r.code for r in result.integrity.reasons]
    assert result.signal("speedup") is None
    codes = {r.code for r in result.integrity.reasons}
    assert codes & {"timed_result_differs", "returned_handle", "assertion_not_plain"}, codes


@pytest.mark.parametrize("name", ["memo", "import_table"])
def test_answers_cached_for_the_same_arguments_earn_no_speedup(
    evaluator: Evaluator, name: str, tmp_path: Path
) -> None:
    result = evaluator.score(CANDIDATES / f"{name}.py")
    assert result.signal("pass_rate") == 1.0  # right answers: nothing to reject
    speedup = result.signal("speedup")
    assert speedup is not None
    # What it is credited is an honest program's figure: a control (the reference's own
    # code, new content, so not answered from the cache) sets the band. Scored minutes
    # apart beside the suite the two ran on different machines, in effect: under -n 2 one
    # 15-round measurement of the same code has read anywhere from 0.67 to 2.7 (the cache
    # once 2.7 twice, the second side by side with the reference, while the control read
    # 1.0). So the control's figure is first carried to the cached candidate's moment by the
    # fresh-argument test, which both run as the same sieve (the cache cannot serve it): a
    # machine that ran the candidate's fresh rounds twice as fast would have credited the
    # control twice as much. A cache credited reads 4-40x above that.
    control = tmp_path / "solution.py"
    control.write_text(
        (CANDIDATES / "honest_reference.py").read_text(encoding="utf-8") + "\n# control\n",
        encoding="utf-8",
    )
    honest = evaluator.score(control)
    # The cache really served the fixed-argument rounds (the control's take ~1 ms; the
    # cache's are the crossing alone, tens of microseconds quiet, 134 us once in CI beside
    # the suite where the control read 8.8x that): uncaught, it would read many times faster.
    assert _median(honest, "test_speed") > 3 * _median(result, "test_speed"), result.to_json()
    load = _median(honest, "test_speed_fresh") / _median(result, "test_speed_fresh")
    noise = (honest.signal("speedup") or 1.0) * load
    assert speedup <= NOISE_BAND * max(1.0, noise), (noise, result.to_json())


def _median(result: ScoreResult, test: str) -> float:
    """The median round of one benchmarked test: ``test_speed`` has the same arguments
    every round, ``test_speed_fresh`` new ones."""
    timed = next(t for t in result.tests if t.nodeid.endswith(f"::{test}"))
    assert timed.benchmark is not None, result.to_json()
    return timed.benchmark.median_s


def test_a_right_program_slow_to_import_keeps_its_tests_and_earns_no_speed(
    evaluator: Evaluator, tmp_path: Path
) -> None:
    # Two seconds of CPU at import: a heavy library loading, or a table made in advance to
    # dodge the benchmarks' clock. Either way its answers are scored; its speed is not
    # credited. Seen in the test process's CPU, which a busy machine does not stretch (the
    # parent's clock alone missed it once in CI, the reference's collection slowed to 0.5 s).
    slow = tmp_path / "solution.py"
    fast = (CANDIDATES / "honest_fast.py").read_text(encoding="utf-8")
    work = (
        "import time\n_t = time.process_time()\nwhile time.process_time() - _t < 2.0:\n    pass\n"
    )
    slow.write_text(work + fast, encoding="utf-8")
    result = evaluator.score(slow)
    assert not result.integrity.rejected, [r.code for r in result.integrity.reasons]
    assert result.signal("pass_rate") == 1.0
    codes = {r.code for r in result.integrity.reasons}
    assert "import_time_work" in codes, result.to_json()
    assert result.signal("speedup") is None


def test_an_honestly_faster_program_keeps_its_speedup_and_the_reference_reads_about_one(
    evaluator: Evaluator,
) -> None:
    fast = evaluator.score(CANDIDATES / "honest_fast.py")
    same = evaluator.score(CANDIDATES / "honest_reference.py")
    for result in (fast, same):
        assert not result.integrity.flagged, [r.code for r in result.integrity.reasons]
    # About 10x on this machine (benchmarks/speed_gaming.py compares with pytest-benchmark).
    # A speedup above 1.5 is measured again in a fresh process beside the reference's run of
    # the same tests, credited at the lower ratio. Measured alone, that second measurement
    # once read 2.1 against 10.8 while other tests forked beside it; beside the reference a
    # load slows both. A fast function's first call in a fresh process, preempted on a
    # busy machine, can read as a cache's (1.2 ms for its 30 us, claimed 2.25 once under
    # -n 2); the re-measurement's first call is the second piece of that evidence. So one of
    # the two is held to the 10x band, and the credit must stay above the threshold, never
    # fall to ~1. Two measurements that agree are credited at their geometric mean.
    # Under -n 2 the first measurement has once read below the threshold itself (the
    # reference's prepared figure taken in a quiet moment): then it is not measured again.
    # Beside other work, rounds can vary by twice their mean: the result then says so
    # (`benchmark_noisy`), and its figure is not evidence either way (once, at -n 4 with the
    # suite's modules each in one worker: 0.90, unmeasured again).
    noisy = "benchmark_noisy" in {r.code for r in fast.integrity.reasons}
    measured = fast.extra.get("speedup_measured")
    if measured is None:
        speedup = fast.signal("speedup") or 0.0
        assert speedup > 1.0 or noisy, fast.to_json()
        return
    claimed, credited = measured
    assert max(claimed, credited) > 3.0 or noisy, fast.to_json()
    assert credited > 1.5 or noisy, fast.to_json()
    # The reference against itself is not measured twice (below 1.5): beside the rest of
    # the suite under -n 2 one measurement has read 0.36 (its rounds' median twice the
    # prepared one's, their spread as large as the median). Quiet, it reads 0.94-1.01.
    # A load that lasts the whole benchmark slows every round alike, so it is not said noisy:
    # once, in a CI-style run of the whole suite, the reference read 0.087 against itself.
    # Slower is never credited; the band holds where the machine is not loaded.
    loaded = os.getloadavg()[0] > (os.cpu_count() or 1)
    ratio = same.signal("speedup") or 0.0
    assert ratio < 4.0, same.to_json()
    assert ratio > 0.25 or loaded, same.to_json()
    assert credited == fast.signal("speedup")


@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    gap_ms=st.sampled_from([0.5, 2.0, 20.0]),
    honest_every=st.integers(min_value=2, max_value=40),
    guess=st.sampled_from(["n // 9", "n // 10 + 7", "2262", "0"]),
)
def test_any_burst_answering_candidate_is_not_credited_speed(
    evaluator: Evaluator,
    tmp_path_factory: pytest.TempPathFactory,
    gap_ms: float,
    honest_every: int,
    guess: str,
) -> None:
    # A family of timing hacks: calls that follow the last one within gap_ms get a guess,
    # except every honest_every-th of a burst (a guess at which round a test asserts).
    source = (CANDIDATES / "honest_reference.py").read_text(encoding="utf-8")
    source = source.replace("def count_primes(n):", "def _sieve(n):") + (
        "\nimport time\n_s = {'last': 0.0, 'run': 0}\n\n"
        "def count_primes(n):\n"
        "    now = time.monotonic()\n"
        f"    _s['run'] = _s['run'] + 1 if now - _s['last'] < {gap_ms / 1000!r} else 1\n"
        f"    burst = n > 1000 and _s['run'] > 1 and _s['run'] % {honest_every} != 0\n"
        f"    answer = ({guess}) if burst else _sieve(n)\n"
        "    _s['last'] = time.monotonic()\n"
        "    return answer\n"
    )
    path = tmp_path_factory.mktemp("burst") / "solution.py"
    path.write_text(source, encoding="utf-8")
    result = evaluator.score(path)
    speedup = result.signal("speedup")
    assert result.integrity.rejected or speedup is None or speedup <= MOST_FOR_GAMING, (
        gap_ms,
        honest_every,
        guess,
        result.to_json(),
    )


def test_the_combined_speedup_is_not_carried_by_one_test() -> None:
    assert lower_median([1000.0, 1.0]) == 1.0
    assert lower_median([1.0, 3.0, 1000.0]) == 3.0
    assert lower_median([4.0]) == 4.0


def test_same_argument_rounds_far_faster_than_the_first_call_are_credited_as_a_cache() -> None:
    # The reference's rounds were as fast as its first call (warm 1.0); a candidate's first
    # call took 1 ms and every round after it 10 us: a cache, credited at 1 ms / COLD_SLACK.
    cached = Benchmark(median_s=1e-5, min_s=1e-5, iqr_s=0.0, rounds=50, first_s=1e-3)
    assert credited_median(cached, 1.0) == pytest.approx(2.5e-4)
    honest = Benchmark(median_s=4e-4, min_s=4e-4, iqr_s=0.0, rounds=50, first_s=1e-3)
    assert credited_median(honest, 1.0) == 4e-4  # within the slack: as measured
    fresh = Benchmark(median_s=1e-5, min_s=1e-5, iqr_s=0.0, rounds=50, first_s=0.0)
    assert credited_median(fresh, 1.0) == 1e-5  # fresh arguments: no first call to go by


def test_cpu_time_is_reported_beside_wall_time_and_work_off_the_clock_earns_no_speed(
    evaluator: Evaluator,
) -> None:
    fast = evaluator.score(CANDIDATES / "honest_fast.py")
    timed = {t.nodeid.split("::")[-1]: t.benchmark for t in fast.tests if t.benchmark}
    if timed["test_speed"].cpu_s is None:
        pytest.skip("the candidate's CPU time is measured only with it apart, on one CPU")
    # An honest program's processes use no more CPU than its timed calls took.
    for figures in timed.values():
        assert figures.cpu_s is not None
        assert figures.cpu_s <= 1.5 * figures.median_s + 0.01, fast.to_json()
    assert not {r.code for r in fast.integrity.reasons} & {"work_off_the_clock"}
    # Right answers, and a helper process that works between the rounds and after them: no
    # speed credited, ever. The evidence (work_off_the_clock) shows when the helper gets the
    # CPU between rounds; a busy machine takes that time away from it, so up to three
    # scorings, and on a machine loaded past its cores the evidence is not required (the
    # property that matters, no credit, still is).
    found = set()
    for _ in range(3):
        ahead = evaluator.score(CANDIDATES / "precompute_between.py")
        assert (ahead.signal("speedup") or 0.0) <= MOST_FOR_GAMING, ahead.to_json()
        codes = {r.code for r in ahead.integrity.reasons}
        if "work_off_the_clock" in codes:  # seen in one test, it voids every test's speed
            assert ahead.signal("speedup") is None, ahead.to_json()
        found |= codes
        if "work_off_the_clock" in found:
            break
    busy = os.getloadavg()[0] > (os.cpu_count() or 1)
    assert busy or "work_off_the_clock" in found, found


#: Fresh arguments each round, used up by the call: apart, the fixture makes the previous
#: round's call again before each round (child/test_process/bench.py ``_warm_up``), and here that
#: call
#: finds an empty list (nothing to do) or, in ``pop_first``, raises.
CONSUMING_TESTS = """
import random

import solution


def test_drains(benchmark):
    total = benchmark.pedantic(
        solution.drain,
        setup=lambda: (([random.randint(0, 9) for _ in range(2000)],), {}),
        rounds=12,
    )
    assert 0 <= total <= 9 * 2000


def test_pop_first(benchmark):
    first = benchmark.pedantic(
        solution.pop_first, setup=lambda: (([random.random()],), {}), rounds=12
    )
    assert 0 <= first < 1


def test_counts_the_calls_of_its_own_function(benchmark):
    seen = []

    def run(items):
        seen.append(solution.drain(items))

    benchmark.pedantic(run, setup=lambda: (([1, 2, 3],), {}), rounds=7)
    # Its rounds, and at most the 3 calls the timed results' check makes again: no call
    # before each round, which only a function of the candidate's gets.
    assert 7 <= len(seen) <= 10
    assert set(seen) == {6}
"""
CONSUMING = """
def drain(items):
    total = 0
    while items:
        total += items.pop()
    return total


def pop_first(items):
    return items.pop(0)
"""


def test_a_call_that_uses_up_its_arguments_is_benchmarked_like_any_other(
    tmp_path: Path,
) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_consume.py").write_text(CONSUMING_TESTS)
    (tmp_path / "solution.py").write_text(CONSUMING)
    with Evaluator(tmp_path / "tests", reference=tmp_path, isolation="process") as ev:
        result = ev.score(tmp_path / "solution.py")
    assert result.signal("pass_rate") == 1.0, result.to_json()
    assert not result.integrity.flagged, [r.code for r in result.integrity.reasons]
    timed = {t.nodeid.split("::")[-1]: t.benchmark for t in result.tests if t.benchmark}
    assert len(timed) == 3
    assert {name: figures.rounds for name, figures in timed.items()} == {
        "test_drains": 12,
        "test_pop_first": 12,
        "test_counts_the_calls_of_its_own_function": 7,
    }


def test_fresh_arguments_cannot_be_worked_out_before_the_rounds(
    evaluator: Evaluator, tmp_path: Path
) -> None:
    # predicted_rounds answers from a table made at import for the arguments the published
    # seeding gives each round; unkeyed, its fresh-argument rounds read ~4 us against the
    # reference's ~600 us. Keyed per Evaluator, the table never holds a round's argument.
    result = evaluator.score(CANDIDATES / "predicted_rounds.py")
    # Against the reference's code scored in the same minute (new content: not deduplicated),
    # by the fastest round of each: load only slows rounds, and the reference's figure from
    # the Evaluator's preparation once read 8.6 ms, 14x its quiet time, beside the suite.
    control = tmp_path / "solution.py"
    control.write_text(
        (CANDIDATES / "honest_reference.py").read_text(encoding="utf-8") + "\n# control\n",
        encoding="utf-8",
    )
    honest = evaluator.score(control)
    nodeid = "tests/test_speed.py::test_speed_fresh"
    figures, honest_figures = (
        next(t.benchmark for t in r.tests if t.nodeid == nodeid) for r in (result, honest)
    )
    assert figures is not None
    assert honest_figures is not None, honest.to_json()
    # The fastest round, or the median where one round was fast by chance: 15 fresh arguments
    # drawn from 10,001 meet the table's 15 once in ~45 scorings (in CI: a 32 us fastest
    # round, a 4.3 ms median). A table that held the rounds' arguments makes both ~100x fast.
    ratios = (
        figures.min_s / honest_figures.min_s,
        figures.median_s / honest_figures.median_s,
    )
    assert max(ratios) > 0.3, (ratios, result.to_json())


def test_pipelines_draw_the_reference_runs_fresh_arguments(evaluator: Evaluator) -> None:
    # More than four at once: pipeline processes adopt what this Evaluator learned, its
    # rounds' key included. approximate_unchecked answers the fresh rounds (which the test
    # does not assert) with a consistent wrong estimate: only the comparison with the
    # reference's rounds on the same arguments rejects it, and with another key no round's
    # arguments would match the reference's.
    paths = [CANDIDATES / "approximate_unchecked.py"] * 5
    for _, result in evaluator.score_many(paths, workers=5):
        codes = {r.code for r in result.integrity.reasons}
        assert result.integrity.rejected, codes
        assert "timed_result_differs" in codes, codes


LAZY_REFERENCE = "def squares(n):\n    return [i * i for i in range(n)]\n"
LAZY_TESTS = """
import solution


def test_squares():
    assert list(solution.squares(4)) == [0, 1, 4, 9]


def test_speed(benchmark):
    result = benchmark(solution.squares, 100_000)
    assert sum(result) == 333328333350000
"""
#: The same work, deferred: a generator returns at once and does its work when the test
#: consumes it, after the clock stopped (a held-back round read 92-145x for this).
LAZY_CANDIDATES = {
    "generator": "def squares(n):\n    return (i * i for i in range(n))\n",
    "map": "def squares(n):\n    return map(lambda i: i * i, range(n))\n",
}


@pytest.mark.parametrize("isolation", ["auto", "in-process"])
def test_a_lazy_timed_result_does_its_work_on_the_clock(tmp_path: Path, isolation: str) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_lazy.py").write_text(LAZY_TESTS, encoding="utf-8")
    (tmp_path / "reference").mkdir()
    (tmp_path / "reference" / "solution.py").write_text(LAZY_REFERENCE, encoding="utf-8")
    with Evaluator(
        tmp_path / "tests", reference=tmp_path / "reference", isolation=isolation
    ) as evaluator:
        for name, source in LAZY_CANDIDATES.items():
            (tmp_path / f"{name}.py").write_text(source, encoding="utf-8")
            result = evaluator.score(tmp_path / f"{name}.py")
            assert result.signal("pass_rate") == 1.0, (name, result.integrity.reasons)
            speedup = result.signal("speedup")
            # Deferred, it read 92-145x; consumed on the clock it does the same work.
            assert speedup is None or speedup <= MOST_FOR_GAMING, (name, speedup)


def test_time_between_many_quick_tests_is_no_reason_to_reject_only_to_credit_no_speed(
    tmp_path: Path,
) -> None:
    # What a loaded machine did to an honest library's 216 quick tests (pytest's durations
    # 0.19 s, the parent's clock 0.79 s), made here by the trusted suite itself: each
    # report is followed by 20 ms that no test's duration holds. timing_mismatch says the
    # clocks disagree: the answers are scored, the speed is not credited.
    tests = tmp_path / "tests"
    shutil.copytree(TASK / "tests", tests)
    (tests / "conftest.py").write_text(
        "import time\n\ndef pytest_runtest_logreport(report):\n    time.sleep(0.02)\n",
        encoding="utf-8",
    )
    (tests / "test_many.py").write_text(
        "import pytest\nimport solution\n\n@pytest.mark.parametrize('n', range(40))\n"
        "def test_quick(n):\n    assert solution.count_primes(2) == 0\n",
        encoding="utf-8",
    )
    with Evaluator(tests, reference=TASK / "reference") as ev:
        result = ev.score(CANDIDATES / "honest_fast.py")
    codes = {r.code for r in result.integrity.reasons}
    assert "timing_mismatch" in codes, result.to_json()
    assert not result.integrity.flagged, codes
    assert not result.integrity.rejected
    assert result.signal("pass_rate") == 1.0
    assert result.signal("speedup") is None


def test_a_first_run_far_slower_than_its_repeats_keeps_its_answers_and_earns_no_speed(
    tmp_path: Path,
) -> None:
    # A load spike during the first of three runs, made by the candidate's clock: the first
    # call made in the next four seconds sleeps five, so the first run is slow and its two
    # repeats are not. A surviving cache would look the same; either way the answers count
    # and the speed does not.
    slow = tmp_path / "solution.py"
    fast = (CANDIDATES / "honest_fast.py").read_text(encoding="utf-8")
    with Evaluator(
        TASK / "tests",
        reference=TASK / "reference",
        repeats=2,
        limits=Limits(timeout_s=60, test_timeout_s=20),
    ) as ev:
        ev.prepare()
        slow.write_text(
            fast + f"\nimport time\n_until = {time.time() + 4.0}\n_count = count_primes\n\n"
            "def count_primes(n):\n    if time.time() < _until:\n        time.sleep(5.0)\n"
            "    return _count(n)\n",
            encoding="utf-8",
        )
        result = ev.score(slow)
    codes = {r.code for r in result.integrity.reasons}
    assert "cross_run_speedup" in codes, (result.signal("first_run_ratio"), codes)
    assert not result.integrity.flagged, codes
    assert not result.integrity.rejected
    assert result.signal("pass_rate") == 1.0
    assert result.signal("speedup") is None
