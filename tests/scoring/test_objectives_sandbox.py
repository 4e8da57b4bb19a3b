"""Objectives and speed end to end, through real sandboxes, in both isolations: the packing
task (a numeric objective scored in the parent) and the speed task (the benchmark fixture
against the reference) of examples/, honest candidates better and worse, and the candidates
that try to win without being better.

Timing assertions are directions only, on speed differences of 10x or more, so that a loaded
2-core machine cannot turn them over.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_scorewright.evaluator import Evaluator
from pytest_scorewright.fitness import Fitness
from pytest_scorewright.limits import Limits
from pytest_scorewright.result import ScoreResult

pytestmark = pytest.mark.sandbox  # every test here forks real sandboxes

ROOT = Path(__file__).resolve().parents[2]
PACKING = ROOT / "examples" / "packing"
SPEED = ROOT / "examples" / "speed"
OBJECTIVE = f"{PACKING / 'objectives.py'}:sum_of_radii"

#: Overlapping circles that claim the largest radii, and a patch of the test's own check so
#: the test passes: in process the check is the test module's, which the candidate can reach
#: (and the monitor sees it replaced); apart, the test module is in another process.
PATCHES_THE_TESTS_CHECK = """
import sys


def pack(n):
    for module in list(sys.modules.values()):
        try:
            if callable(getattr(module, "overlapping", None)):
                module.overlapping = lambda circles: []
        except Exception:
            pass
    return [(0.5, 0.5, 0.5)] * n
"""

#: A valid packing, and a forged submission written straight into the run's message pipe
#: (every descriptor above 2, as the red team of issue 14 found it): a score the parent
#: never computed, for a test that submits nothing.
FORGES_A_SUBMISSION = """
import json, os, struct

FORGED = json.dumps({"type": "submit", "name": "radii", "value": 1000.0}).encode()


def pack(n):
    for name in os.listdir("/proc/self/fd"):
        if int(name) > 2:
            try:
                os.write(int(name), struct.pack(">I", len(FORGED)) + FORGED)
            except OSError:
                pass
    r = 1 / 8
    return [((2 * (i % 4) + 1) * r, (2 * (i // 4) + 1) * r, r) for i in range(n)]
"""

#: The objective function's own file, read to learn what scores: it is never copied into a
#: run, and where the sandbox's filesystem guarantee holds it cannot be read where it is.
READS_THE_OBJECTIVE = f"""
def pack(n):
    try:
        open({str(PACKING / "objectives.py")!r}).read()
    except OSError:
        return [(0.5, 0.5, 0.5)] * n  # could not: an invalid packing, scored 0
    r = 1 / 8
    return [((2 * (i % 4) + 1) * r, (2 * (i // 4) + 1) * r, r) for i in range(n)]
"""


def _judged(result: ScoreResult, fitness: Fitness) -> float:
    score = fitness.evaluate(result).score
    assert score is not None, result.to_json()
    return score


def _write(tmp_path: Path, name: str, source: str) -> Path:
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    return path


@pytest.fixture(scope="module", params=["process", "in-process"])
def packing(request: pytest.FixtureRequest) -> Iterator[Evaluator]:
    with Evaluator(
        PACKING / "tests",
        reference=PACKING / "reference",
        objectives={"radii": OBJECTIVE},
        isolation=request.param,
    ) as evaluator:
        yield evaluator


@pytest.fixture(scope="module", params=["process", "in-process"])
def speed(request: pytest.FixtureRequest) -> Iterator[Evaluator]:
    with Evaluator(
        SPEED / "tests", reference=SPEED / "reference", isolation=request.param
    ) as evaluator:
        yield evaluator


def test_the_reference_is_measured_once_when_the_evaluator_is_built(
    packing: Evaluator, speed: Evaluator
) -> None:
    assert packing.reference.objectives == {"radii": 1.5}
    ((key, median),) = speed.reference.bench.items()
    assert key == (False, "tests/test_primes.py::test_speed")
    assert median > 0
    # It benchmarks, so each candidate process is timed for a call's items too; the
    # packing task's reference benchmarks nothing.
    assert speed._runner.planner.settings.benchmarks
    assert not packing._runner.planner.settings.benchmarks


def test_a_better_packing_scores_higher_and_a_forged_one_gains_nothing(
    packing: Evaluator, tmp_path: Path
) -> None:
    fitness = Fitness("objective", {"objective": "radii"})
    better = packing.score(PACKING / "better.py")
    worse = packing.score(PACKING / "initial_program.py")
    forged = packing.score(PACKING / "forged.py")
    assert better.signal("objective_radii") == pytest.approx(1.7069, abs=1e-4)
    assert worse.signal("objective_radii") == pytest.approx(0.48)
    # Claims of large radii that overlap: the parent's function scores what was submitted.
    assert forged.signal("objective_radii") == 0.0
    assert _judged(better, fitness) > _judged(worse, fitness) > _judged(forged, fitness) == 0.0
    patched = packing.score(_write(tmp_path, "patcher", PATCHES_THE_TESTS_CHECK))
    assert _judged(patched, fitness) == 0.0
    if packing.isolated:
        # Nothing to patch in the candidate's own process: the test's check fails it.
        assert patched.signal("objective_radii") == 0.0
        assert {t.nodeid.split("::")[1]: t.outcome for t in patched.tests}[
            "test_no_two_circles_overlap"
        ] == "failed"
    else:
        assert patched.integrity.rejected
        assert "oracle_replaced" in {r.code for r in patched.integrity.reasons}


def test_a_submission_forged_into_the_message_pipe_is_never_scored(
    packing: Evaluator, tmp_path: Path
) -> None:
    result = packing.score(_write(tmp_path, "forger", FORGES_A_SUBMISSION))
    codes = {r.code for r in result.integrity.reasons}
    assert result.integrity.rejected
    assert result.signal("objective_radii") is None
    if packing.isolated:
        # The candidate's process holds no descriptor of the run's pipe, only its call
        # channel, where a frame of anything else ends the channel as forged.
        assert "forged_message" in codes, result.integrity.reasons
    else:
        # In the test process it reaches the pipe: the parent takes the value as a submission
        # of the running test, which the reference never made there.
        assert "submission_unexpected" in codes, result.integrity.reasons


def test_the_objective_file_is_out_of_a_candidates_reach(
    packing: Evaluator, tmp_path: Path
) -> None:
    if packing.guarantees["filesystem"] is not None:
        pytest.skip(f"the filesystem guarantee does not hold here: {packing.guarantees}")
    result = packing.score(_write(tmp_path, "reader", READS_THE_OBJECTIVE))
    assert result.signal("objective_radii") == 0.0


def test_a_faster_candidate_gets_a_speedup_above_one_and_a_slower_one_below(
    speed: Evaluator,
) -> None:
    fitness = Fitness("objective", {"objective": "speedup"})
    fast = speed.score(SPEED / "fast.py")  # ~20x faster than the reference
    slow = speed.score(SPEED / "initial_program.py")  # ~30x slower
    assert (fast.signal("speedup") or 0.0) > 1, fast.to_json()
    assert 0 < (slow.signal("speedup") or 0.0) < 1, slow.to_json()
    assert _judged(fast, fitness) > _judged(slow, fitness)
    assert 0 < (fast.signal("bench_median_s") or 0.0) < (slow.signal("bench_median_s") or 0.0)
    (record,) = [t for t in fast.tests if t.benchmark is not None]
    assert record.benchmark is not None
    assert (record.benchmark.overhead_s > 0) == speed.isolated  # a round trip, apart only


def test_a_candidate_that_replaces_the_timer_gets_no_speed_credit(speed: Evaluator) -> None:
    result = speed.score(SPEED / "timer.py")
    assert result.integrity.rejected
    assert "timer_patched" in {r.code for r in result.integrity.reasons}
    assert result.signal("speedup") is None
    assert result.signal("bench_median_s") is None
    assert _judged(result, Fitness("objective", {"objective": "speedup"})) == 0.0
    weighted = Fitness("weighted", {"speedup_weight": "1"})
    assert _judged(result, weighted) == 0.0


#: Slow (trial division, ~30x the reference's time), and slows the null calls its own process
#: serves between the rounds (its to change, apart) well beyond one call's time: were they
#: subtracted whole, every call would read as the floor, a tenth of that, and the candidate
#: as fast as the reference. The module's name is built so that the static scan does not
#: flag it.
SLOWS_THE_NULL_CALLS = """
import sys
import time


def _slow_null_calls():
    name = ".".join(["pytest_" + "score" + "wright", "child", "apart", "candidate"])
    server = sys.modules.get(name)
    if server is None:
        raise SystemExit("the attack found no server to slow")

    def null_call(*args, **kwargs):
        time.sleep(0.05)

    server.null_call = null_call


_slow_null_calls()


def count_primes(n):
    count = 0
    for k in range(2, n):
        if all(k % d for d in range(2, int(k**0.5) + 1)):
            count += 1
    return count
"""


def test_slowed_null_calls_are_never_subtracted_beyond_those_before_the_import(
    tmp_path: Path,
) -> None:
    with Evaluator(SPEED / "tests", reference=SPEED / "reference", isolation="process") as ev:
        result = ev.score(_write(tmp_path, "slow_null_calls", SLOWS_THE_NULL_CALLS))
    (record,) = [t for t in result.tests if t.benchmark is not None]
    assert record.benchmark is not None
    # The attack ran: at least ten null calls of 50 ms were timed after the rounds.
    assert record.duration_s is not None
    assert record.duration_s > 0.5, result.to_json()
    assert record.benchmark.overhead_s < 0.02  # the null calls before the import: < 1 ms
    assert 0 < (result.signal("speedup") or 0.0) < 0.5, result.to_json()


#: A suite whose reference benchmarks nothing: candidate processes are not timed for what a
#: call's items cost (~3 ms of CPU each saved); a candidate that makes a test benchmark all
#: the same gets its figures, with the empty call's cost, timed before its import, taken off.
ASKS_FOR_THE_FIXTURE_LATE = """
import pytest
import solution


def test_counts():
    assert solution.count_primes(10) == 4


def test_speed_where_offered(request):
    if getattr(solution, "OFFERS_SPEED", False):
        benchmark = request.getfixturevalue("benchmark")
        assert benchmark(solution.count_primes, 30_000) == 3245
"""


def test_a_suite_that_benchmarks_only_for_some_candidates_still_times_them(
    tmp_path: Path,
) -> None:
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_late.py").write_text(ASKS_FOR_THE_FIXTURE_LATE)
    offers = _write(tmp_path, "offers", (SPEED / "fast.py").read_text() + "\nOFFERS_SPEED = True\n")
    limits = Limits(test_timeout_s=20.0)
    with Evaluator(tests, reference=SPEED / "reference", isolation="process", limits=limits) as ev:
        assert not ev._runner.planner.settings.benchmarks
        result = ev.score(offers)
    assert result.signal("pass_rate") == 1.0, result.to_json()
    (record,) = [t for t in result.tests if t.benchmark is not None]
    assert record.benchmark is not None
    assert 0 < record.benchmark.overhead_s < 0.02  # the empty call's, timed before the import


#: In the test process, the benchmark fixture's own clock replaced (the binding made before
#: any candidate code was imported): a counter that makes every call look instantaneous.
REPLACES_THE_FIXTURES_CLOCK = """
import itertools

import pytest_scorewright.child.test_process.bench as bench

_ticks = itertools.count()
bench._clock = lambda: next(_ticks) * 1e-9


def count_primes(n):
    count = 0
    for k in range(2, n):
        if all(k % d for d in range(2, int(k**0.5) + 1)):
            count += 1
    return count
"""


@pytest.mark.parametrize("isolation", ["process", "in-process"])
def test_a_candidate_that_replaces_the_fixtures_own_clock_gets_no_speed_credit(
    isolation: str, tmp_path: Path
) -> None:
    # In process, a clock that barely moves makes the fixture's calibration grow the calls per
    # round without end: the run times out (a short budget here), with the evidence kept.
    with Evaluator(
        SPEED / "tests",
        reference=SPEED / "reference",
        isolation=isolation,
        limits=Limits(timeout_s=8),
    ) as evaluator:
        result = evaluator.score(_write(tmp_path, "clock", REPLACES_THE_FIXTURES_CLOCK))
    assert result.signal("speedup") is None
    assert _judged(result, Fitness("objective", {"objective": "speedup"})) == 0.0
    # Apart, the candidate replaced its own process's copy: its monitor reports it all the same.
    assert result.integrity.rejected
    assert "timer_patched" in {r.code for r in result.integrity.reasons}


def _cli(*args: str) -> ScoreResult:
    done = subprocess.run(
        [sys.executable, "-m", "pytest_scorewright.cli", "score", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return ScoreResult.from_json(done.stdout)


@pytest.mark.parametrize("isolation", ["process", "in-process"])
def test_scorewright_score_ranks_by_the_objective_and_by_speed(
    isolation: str, tmp_path: Path
) -> None:
    common = ["--isolation", isolation, "--fitness", "objective", "--fitness-config"]
    packing = [
        *("--tests", str(PACKING / "tests"), "--reference", str(PACKING / "reference")),
        *("--objective", f"radii={OBJECTIVE}", *common, "objective=radii"),
    ]
    speed = [
        *("--tests", str(SPEED / "tests"), "--reference", str(SPEED / "reference")),
        *common,
        "objective=speedup",
    ]
    patcher = _write(tmp_path, "patcher", PATCHES_THE_TESTS_CHECK)
    results = {
        name: _cli(str(program), *args)
        for name, program, args in (
            ("better", PACKING / "better.py", packing),
            ("worse", PACKING / "initial_program.py", packing),
            ("patcher", patcher, packing),
            ("fast", SPEED / "fast.py", speed),
            ("slow", SPEED / "initial_program.py", speed),
            ("timer", SPEED / "timer.py", speed),
        )
    }
    score = {name: r.extra["fitness"]["combined_score"] for name, r in results.items()}
    assert score["better"] > score["worse"] > score["patcher"] == 0.0, score
    assert (results["fast"].signal("speedup") or 0.0) > 1 > (results["slow"].signal("speedup") or 0)
    assert score["fast"] > score["slow"] > score["timer"] == 0.0, score
    assert results["timer"].signal("speedup") is None


@pytest.mark.parametrize("cascade", [True, False], ids=["cascade", "direct"])
def test_openevolve_ranks_by_the_objective_and_by_speed_through_its_real_evaluator(
    cascade: bool,
) -> None:
    openevolve_config = pytest.importorskip("openevolve.config")
    openevolve_evaluator = pytest.importorskip("openevolve.evaluator")
    config = openevolve_config.load_config(str(ROOT / "examples" / "openevolve" / "config.yaml"))
    config.evaluator.cascade_evaluation = cascade
    found = {}
    for task, programs in (
        (PACKING, ("better", "initial_program", "forged")),
        (SPEED, ("fast", "initial_program", "timer")),
    ):
        evaluator = openevolve_evaluator.Evaluator(config.evaluator, str(task / "evaluator.py"))
        for name in programs:
            code = (task / f"{name}.py").read_text()
            metrics = asyncio.run(evaluator.evaluate_program(code, f"{task.name}-{name}"))
            found[f"{task.name}-{name}"] = metrics
    score = {k: float(m.get("combined_score", -1.0)) for k, m in found.items()}
    assert score["packing-better"] > score["packing-initial_program"] > 0, score
    assert score["packing-forged"] == 0.0, score
    assert score["speed-fast"] > score["speed-initial_program"] > score["speed-timer"], score
    assert score["speed-timer"] == 0.0
    assert (
        found["speed-fast"]["scorewright_speedup"]
        > 1
        > found["speed-initial_program"]["scorewright_speedup"]
    )
    assert found["packing-better"]["scorewright_objective_radii"] == pytest.approx(1.7069, 1e-4)


def test_shinka_gets_the_objective_as_its_combined_score(tmp_path: Path) -> None:
    from pytest_scorewright.cli import main

    code = main(
        [
            "shinka",
            *("--program_path", str(PACKING / "better.py"), "--results_dir", str(tmp_path)),
            *("--tests", str(PACKING / "tests"), "--reference", str(PACKING / "reference")),
            *("--objective", f"radii={OBJECTIVE}", "--fitness", "objective"),
            *("--fitness-config", "objective=radii"),
        ]
    )
    assert code == 0
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["combined_score"] == pytest.approx(1.7069, abs=1e-4)
    assert metrics["public"]["objective_radii"] == metrics["combined_score"]
    assert json.loads((tmp_path / "correct.json").read_text())["correct"] is True
