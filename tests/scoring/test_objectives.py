"""Objectives and benchmarks on the parent's side, without a fork: the verdict on benchmark
and submit messages, objective functions loaded and called in the parent, the speed and
objective signals, the fitness functions that use them, and the result file."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_scorewright.errors import ConfigError
from pytest_scorewright.fitness import Fitness
from pytest_scorewright.integrity.verdict import judge
from pytest_scorewright.leaderboard import page, rank, table
from pytest_scorewright.protocol import wire
from pytest_scorewright.protocol.wire import ChildOutcome
from pytest_scorewright.result import Benchmark, Outcome, Reason, ScoreResult, TestRecord
from pytest_scorewright.results.measure import benchmark_signals, build_result
from pytest_scorewright.scoring.objectives import (
    Objective,
    ObjectiveSet,
    Submitted,
    parse_option,
    take_submissions,
)
from tests.conftest import validate

EXPECTED = [("t.py::test_a", False), ("t.py::test_b", False)]


def _report(nodeid: str, when: str) -> dict[str, Any]:
    return {
        "type": wire.REPORT,
        "nodeid": nodeid,
        "when": when,
        "outcome": "passed",
        "duration": 0.01,
    }


def _figures(**changes: Any) -> dict[str, Any]:
    figures = {
        "type": wire.BENCHMARK,
        "rounds": 10,
        "iterations": 2,
        "median_s": 0.001,
        "min_s": 0.0009,
        "iqr_s": 0.0001,
        "mean_s": 0.001,
        "stdev_s": 0.0001,
        "total_s": 0.02,
        "overhead_s": 0.00004,
        "first_s": 0.0,
    }
    return {**figures, **changes}


def _run(*test_a: dict[str, Any], times: list[float] | None = None) -> ChildOutcome:
    """A run in which test_a sends ``test_a`` between its setup and call reports, test_b
    nothing; ``times`` are the arrival stamps (else 0.1 s apart)."""
    stream = [
        {"type": wire.SANDBOX, "uid": None},
        _report("t.py::test_a", "setup"),
        *test_a,
        _report("t.py::test_a", "call"),
        _report("t.py::test_a", "teardown"),
        *(_report("t.py::test_b", w) for w in ("setup", "call", "teardown")),
        {"type": wire.FINISH, "exitstatus": 0},
    ]
    stamps = times or [0.1 * i for i in range(len(stream))]
    return ChildOutcome(messages=list(zip(stamps, stream, strict=True)), exit_code=0)


def _codes(verdict: Any) -> set[str]:
    return {r.code for r in verdict.reasons}


# -- the verdict on benchmark and submit messages -------------------------------------------


def test_benchmark_figures_go_on_the_record_of_the_test_the_parent_saw_running() -> None:
    verdict = judge(EXPECTED, _run(_figures(nodeid="t.py::test_b")), timeout_s=5)
    records = {r.nodeid: r for r in verdict.records}
    assert records["t.py::test_a"].benchmark == Benchmark(0.001, 0.0009, 0.0001, 10, 2, 4e-05)
    assert records["t.py::test_b"].benchmark is None
    assert not verdict.reasons


@pytest.mark.parametrize(
    ("messages", "why"),
    [
        ((_figures(), _figures()), "a second benchmark"),
        ((_figures(min_s=0.002),), "do not fit together"),
        ((_figures(rounds=0),), "no rounds"),
        ((_figures(total_s=5.0, median_s=0.5, min_s=0.4),), "on the parent's clock"),
    ],
    ids=["twice", "min-above-median", "no-rounds", "more-than-the-clock"],
)
def test_benchmark_figures_the_fixture_never_sends_are_tamper_evidence(
    messages: tuple[dict[str, Any], ...], why: str
) -> None:
    verdict = judge(EXPECTED, _run(*messages), timeout_s=5)
    (found,) = [r for r in verdict.reasons if r.code == "benchmark_forged"]
    assert found.severity == "tamper"
    assert why in found.detail


def test_timed_rounds_are_checked_against_the_parents_clock_summed_over_the_run() -> None:
    # Each benchmark alone fits in the run so far; together they claim more than it lasted.
    stream = [
        {"type": wire.SANDBOX, "uid": None},
        _report("t.py::test_a", "setup"),
        _figures(total_s=0.3, median_s=0.01, min_s=0.01),
        _report("t.py::test_a", "call"),
        _report("t.py::test_a", "teardown"),
        _report("t.py::test_b", "setup"),
        _figures(total_s=0.3, median_s=0.01, min_s=0.01),
        _report("t.py::test_b", "call"),
        _report("t.py::test_b", "teardown"),
        {"type": wire.FINISH, "exitstatus": 0},
    ]
    stamps = [0.0, 0.01, 0.35, 0.36, 0.37, 0.38, 0.45, 0.46, 0.47, 0.48]
    outcome = ChildOutcome(messages=list(zip(stamps, stream, strict=True)), exit_code=0)
    verdict = judge(EXPECTED, outcome, timeout_s=5)
    (found,) = [r for r in verdict.reasons if r.code == "benchmark_forged"]
    assert "0.600s" in found.detail
    assert "test_b" in found.detail
    # Stamped late (a busy parent), the same claims fit: the check never errs that way.
    late = ChildOutcome(messages=[(t + 1.0, m) for t, m in outcome.messages], exit_code=0)
    assert "benchmark_forged" not in _codes(judge(EXPECTED, late, timeout_s=5))


def test_a_benchmark_whose_calls_vary_widely_is_a_hint() -> None:
    verdict = judge(EXPECTED, _run(_figures(stdev_s=0.002)), timeout_s=5)
    (found,) = verdict.reasons
    assert (found.code, found.severity) == ("benchmark_noisy", "hint")


def test_submitted_values_are_decoded_and_filed_under_the_running_test() -> None:
    value = {"t": [1, {"f": "inf"}, {"b": "/w=="}]}  # protocol/values.py's tags
    verdict = judge(
        EXPECTED,
        _run({"type": wire.SUBMIT, "name": "radii", "value": value, "nodeid": "t.py::test_b"}),
        timeout_s=5,
    )
    (submitted,) = verdict.submissions
    assert (submitted.test, submitted.name) == ("t.py::test_a", "radii")
    assert submitted.value == (1, math.inf, b"\xff")


@pytest.mark.parametrize(
    "message",
    [
        {"type": wire.SUBMIT, "name": "radii", "value": {"no such tag": 1}},
        {"type": wire.SUBMIT, "name": "Radii!", "value": 1},
        {"type": wire.SUBMIT, "name": "radii"},
    ],
    ids=["undecodable", "bad-name", "no-value"],
)
def test_a_submission_our_fixture_never_sends_is_malformed_and_dropped(
    message: dict[str, Any],
) -> None:
    verdict = judge(EXPECTED, _run(message), timeout_s=5)
    assert verdict.submissions == []
    assert "malformed_message" in _codes(verdict)


# -- objective functions, in the parent --------------------------------------------------------


OBJECTIVES = """
import time

def total(value):
    if not isinstance(value, list):
        return 0.0
    return float(sum(value))

def broken(value):
    raise ValueError("cannot score this")

def words(value):
    return "many"

def endless(value):
    time.sleep(5)
"""


@pytest.fixture
def objective_file(tmp_path: Path) -> Path:
    path = tmp_path / "objectives.py"
    path.write_text(OBJECTIVES)
    (tmp_path / "tests").mkdir()
    return path


def _submitted(*values: Any, name: str = "total", test: str = "t.py::test_a") -> list[Submitted]:
    return [Submitted(test, False, name, v) for v in values]


def _records(*nodeids: str, credited: bool = True) -> list[TestRecord]:
    return [
        TestRecord(n, "passed", "call", False, 0.1, credited=credited)
        for n in nodeids or ("t.py::test_a",)
    ]


def test_an_objective_is_the_mean_of_its_function_over_credited_submissions(
    objective_file: Path,
) -> None:
    objectives = ObjectiveSet({"total": f"{objective_file}:total"})
    signals, results = objectives.score(_submitted([1, 2], [3], "junk"), _records())
    assert [(s.name, s.value, s.higher_is_better) for s in signals] == [
        ("objective_total", 2.0, True)
    ]
    assert (results[0].value, results[0].submissions, results[0].error) == (2.0, 3, None)
    # A test whose credit was withdrawn submits nothing that counts.
    signals, results = objectives.score(_submitted([1, 2]), _records(credited=False))
    assert signals == []
    assert results[0].error == "no credited test submitted a value named 'total'"


@pytest.mark.parametrize(
    ("function", "error"),
    [
        ("broken", "raised on submitted value #1: ValueError: cannot score this"),
        ("words", "returned a str for submitted value #1, not a number"),
    ],
)
def test_an_objective_that_cannot_score_is_absent_with_the_reason(
    objective_file: Path, function: str, error: str
) -> None:
    objectives = ObjectiveSet({"total": f"{objective_file}:{function}"})
    signals, results = objectives.score(_submitted([1]), _records())
    assert signals == []
    assert results[0].value is None
    assert error in (results[0].error or "")


def test_an_objective_function_that_runs_too_long_is_given_up(objective_file: Path) -> None:
    objectives = ObjectiveSet(
        {"total": Objective(f"{objective_file}:endless", minimize=True, timeout_s=0.1)}
    )
    started = time.monotonic()
    _, results = objectives.score(_submitted([1]), _records())
    assert time.monotonic() - started < 2
    assert "took more than 0.1s" in (results[0].error or "")
    assert results[0].higher_is_better is False


def test_objectives_are_checked_when_the_evaluator_is_built(objective_file: Path) -> None:
    tests = objective_file.parent / "tests"
    inside = tests / "objectives.py"
    inside.write_text(OBJECTIVES)
    cases = {
        f"{inside}:total": "copied into every run, where a candidate could read it",
        f"{objective_file.parent / 'missing.py'}:total": "is not a Python file",
        f"{objective_file}:absent": "has no function 'absent'",
        "no-colon": "is not PATH:FUNCTION",
    }
    for source, message in cases.items():
        with pytest.raises(ConfigError, match=message):
            ObjectiveSet({"total": source}, inside=[tests])
    broken = objective_file.parent / "broken.py"
    broken.write_text("import no_such_module_here\n")
    with pytest.raises(ConfigError, match=r"cannot be imported .*ModuleNotFoundError"):
        ObjectiveSet({"total": f"{broken}:f"})
    with pytest.raises(ConfigError, match="lower-case letters"):
        ObjectiveSet({"Total": f"{objective_file}:total"})


def test_objective_options_read_name_path_and_function() -> None:
    name, objective = parse_option("radii=tasks/score.py:radii", minimize=True, option="-o")
    assert (name, objective) == ("radii", Objective("tasks/score.py:radii", minimize=True))
    with pytest.raises(ConfigError, match="is not NAME=PATH:FUNCTION"):
        parse_option("radii", minimize=False, option="--objective")


def test_in_process_a_test_may_submit_only_as_often_as_the_references_did() -> None:
    submissions = _submitted(1, 2, 3) + _submitted(9, test="t.py::test_b")
    records = _records("t.py::test_a", "t.py::test_b")
    run = [("visible", [_as_verdict_submission(s) for s in submissions], records)]
    expected = {("visible", "t.py::test_a", "total"): 2}
    accepted, refused, first = take_submissions(run, expected)
    assert [s.value for s in accepted] == [1, 2]
    assert (refused, first) == (2, "'total' in t.py::test_a")
    accepted, refused, _ = take_submissions(run, None)  # apart: only the tests can submit
    assert (len(accepted), refused) == (4, 0)


def _as_verdict_submission(s: Submitted) -> Any:
    from pytest_scorewright.integrity.verdict import Submission

    return Submission(s.test, s.name, s.value)


# -- signals ----------------------------------------------------------------------------------


def _timed(nodeid: str, median: float, outcome: Outcome = "passed", **kw: Any) -> TestRecord:
    return TestRecord(
        nodeid, outcome, "call", False, 0.1, benchmark=Benchmark(median, median, 0.0, 5), **kw
    )


def test_speed_signals_count_only_credited_passing_benchmarks() -> None:
    records = [
        _timed("t::a", 0.001),
        _timed("t::b", 0.004),
        _timed("t::c", 1.0, outcome="failed"),  # a wrong answer earns no speed
        _timed("t::d", 1.0, credited=False),  # nor does a run whose outcomes are not trusted
        TestRecord("t::e", "passed", "call", False, 0.1),
    ]
    reference = {(False, "t::a"): 0.002, (False, "t::b"): 0.002, (False, "t::c"): 9.0}
    found = {s.name: s for s in benchmark_signals(records, reference)}
    assert found["bench_median_s"].value == pytest.approx(0.002)
    assert found["bench_median_s"].higher_is_better is False
    # 2x faster and 2x slower: the lower median (results/measure.py), not a mean.
    assert found["speedup"].value == pytest.approx(0.5)
    assert found["speedup"].higher_is_better is True
    assert benchmark_signals([_timed("t::c", 1.0, outcome="failed")], reference) == []


def _result(signals: dict[str, float], *, higher: dict[str, bool] | None = None) -> ScoreResult:
    records = [TestRecord("t::a", "passed", "call", False, 0.1)]
    base = build_result(records, mode="evaluator", duration_s=1.0)
    from dataclasses import replace

    from pytest_scorewright.result import Signal

    added = tuple(
        Signal(n, v, "score", (higher or {}).get(n, n != "bench_median_s"))
        for n, v in signals.items()
    )
    return replace(base, signals=(*base.signals, *added))


# -- fitness ----------------------------------------------------------------------------------


def test_weighted_takes_weights_for_speed_and_each_objective() -> None:
    fitness = Fitness(
        "weighted",
        {
            "pass_rate_weight": "0",
            "speedup_weight": "0.5",
            "bench_penalty": "100",
            "objective_radii": "2",
            "objective_steps": "-0.1",
        },
    )
    result = _result({"speedup": 4.0, "bench_median_s": 0.001, "objective_radii": 1.5})
    outcome = fitness.evaluate(result)
    assert outcome.score == pytest.approx(0.5 * 4 - 100 * 0.001 + 2 * 1.5)
    assert outcome.details["objective_steps"] == 0.0  # unmeasured: adds nothing
    with pytest.raises(ConfigError, match="unknown key 'objective_'"):
        Fitness("weighted", {"objective_": 1})
    with pytest.raises(ConfigError, match="must be a number"):
        Fitness("weighted", {"objective_radii": "lots"})


def test_the_objective_fitness_is_one_objective_gated_by_correctness() -> None:
    good = _result({"objective_radii": 1.7})
    assert Fitness("objective", {"objective": "radii"}).evaluate(good).score == 1.7
    half = build_result(
        [
            TestRecord("t::a", "passed", "call", False, 0.1),
            TestRecord("t::b", "failed", "call", False, 0.1),
        ],
        mode="evaluator",
        duration_s=1.0,
    )
    from dataclasses import replace

    from pytest_scorewright.result import Signal

    half = replace(half, signals=(*half.signals, Signal("objective_radii", 1.7, "score", True)))
    assert Fitness("objective", {"objective": "radii"}).evaluate(half).score == 0.0
    gated = Fitness("objective", {"objective": "radii", "required_pass_rate": "0.5"})
    assert gated.evaluate(half).score == 1.7
    multiplied = Fitness("objective", {"objective": "objective_radii", "gate": "multiply"})
    assert multiplied.evaluate(half).score == pytest.approx(0.85)
    missing = Fitness("objective", {"objective": "speedup"}).evaluate(good)
    assert (missing.score, missing.details["objective_missing"]) == (0.0, 1.0)
    with pytest.raises(ConfigError, match="must name the objective"):
        Fitness("objective")


def test_a_lower_is_better_objective_scores_higher_the_lower_it_is() -> None:
    fitness = Fitness("objective", {"objective": "steps"})
    scores = [
        fitness.evaluate(_result({"objective_steps": v}, higher={"objective_steps": False})).score
        for v in (-2.0, 0.0, 3.0, 10.0)
    ]
    assert scores == [3.0, 1.0, 0.25, pytest.approx(1 / 11)]
    assert Fitness("objective", {"objective": "bench_median_s"}).evaluate(
        _result({"bench_median_s": 1.0})
    ).score == pytest.approx(0.5)
    forced = Fitness("objective", {"objective": "steps", "direction": "max"})
    assert forced.evaluate(_result({"objective_steps": 3.0})).score == 3.0


# -- the result file and the leaderboard -------------------------------------------------------


def test_benchmarks_and_objectives_round_trip_through_the_schema() -> None:
    records = [_timed("t::a", 0.001)]
    from pytest_scorewright.result import ObjectiveResult

    result = build_result(
        records,
        mode="evaluator",
        duration_s=1.0,
        bench_reference={(False, "t::a"): 0.002},
        objectives=lambda credited: (
            [],
            [ObjectiveResult("radii", None, True, 0, "no credited test submitted")],
        ),
        reasons=[Reason("benchmark_noisy", "x", "hint")],
    )
    data = json.loads(result.to_json())
    validate(data)
    assert data["tests"][0]["benchmark"]["median_s"] == 0.001
    assert data["objectives"][0]["error"] == "no credited test submitted"
    assert ScoreResult.from_dict(data) == result
    assert result.signal("speedup") == pytest.approx(2.0)
    # A version 2 file from before these fields reads with their defaults.
    del data["objectives"], data["tests"][0]["benchmark"]
    old = ScoreResult.from_dict(data)
    assert old.objectives == ()
    assert old.tests[0].benchmark is None


def test_the_leaderboard_has_a_column_per_objective_and_charts_one() -> None:
    results = [
        ("fast", _result({"speedup": 12.5, "objective_radii": 1.7})),
        ("slow", _result({"speedup": 0.1, "objective_radii": 0.5})),
        ("plain", _result({})),
    ]
    rows = rank(results, Fitness("objective", {"objective": "radii"}))
    assert [r.candidate for r in rows] == ["fast", "slow", "plain"]
    text = table(rows)
    header = text.splitlines()[0].split()
    assert header[-3:] == ["speedup", "radii", "flagged"]
    assert "12.50x" in text
    assert "1.7" in text
    html = page(rows, "objective", plot="radii")
    assert "objective_radii (scaled to its largest)" in html
    assert html.count('fill="#bf8700"') == 3
    assert "#bf8700" not in page(rows, "objective", plot="no_such_signal")


def test_submit_refuses_what_it_cannot_send_plainly(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest


        class Mine(list):
            pass


        def test_plain(scorewright):
            scorewright.submit("radii", [(0.5, 0.5, 0.25)])  # plugin mode: checked, not sent


        @pytest.mark.parametrize(
            "name, value, error, match",
            [
                ("Radii", 1, ValueError, "lower-case letters"),
                ("radii", Mine(), TypeError, "not plain data"),
                ("radii", "x" * 200_000, ValueError, "more than 131072"),
            ],
        )
        def test_refused(scorewright, name, value, error, match):
            with pytest.raises(error, match=match):
                scorewright.submit(name, value)
        """
    )
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=4)


def test_verifiers_keyed_scores_carry_speed_and_every_objective() -> None:
    from pytest_scorewright.verifiers import keyed_scores

    result = _result({"speedup": 3.0, "objective_radii": 1.5, "objective_steps": 7.0})
    scores = keyed_scores(result, Fitness().evaluate(result))
    assert scores["scorewright_speedup"] == 3.0
    assert scores["scorewright_objective_radii"] == 1.5
    assert scores["scorewright_objective_steps"] == 7.0


@pytest.mark.parametrize("task", ["packing", "speed"])
def test_the_examples_openevolve_configs_are_accepted_and_evaluate_in_full(task: str) -> None:
    config = pytest.importorskip("openevolve.config")
    loaded = config.load_config(str(Path(__file__).parents[2] / "examples" / task / "config.yaml"))
    assert loaded.evaluator.cascade_evaluation is False
