"""Noise-aware scores: a candidate measured k times (each signal's mean and 95% interval,
flaky tests named), confirmation at the worse end of each interval, and a reference whose
own runs disagree on a test making that test not applicable."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_scorewright.errors import ConfigError
from pytest_scorewright.evaluator import Evaluator
from pytest_scorewright.results.repeats import bootstrap_mean, wilson

TASK = Path(__file__).resolve().parents[1] / "flaky_task"
#: The reference's coin and the flaky candidate's double are fair coins: with this many runs
#: the chance that every run agrees (and the test is not seen as flaky) is 2 in 2**12.
RUNS = 12


def test_wilson_and_bootstrap_give_the_textbook_intervals() -> None:
    low, high = wilson(5, 10)
    assert (round(low, 4), round(high, 4)) == (0.2366, 0.7634)
    assert wilson(0, 10)[0] == 0.0
    assert round(wilson(0, 10)[1], 4) == 0.2775
    assert wilson(10, 10)[1] == pytest.approx(1.0)
    assert bootstrap_mean([1.0, 1.0, 1.0]) == (1.0, 1.0)
    values = [0.9, 1.1, 1.0, 1.3, 0.8]
    first = bootstrap_mean(values)
    assert first == bootstrap_mean(values)  # seeded: the same values, the same interval
    assert min(values) <= first[0] < sum(values) / len(values) < first[1] <= max(values)


@pytest.fixture(scope="module")
def evaluator() -> Iterator[Evaluator]:
    with Evaluator(TASK / "tests", reference=TASK / "reference", reference_repeats=RUNS) as made:
        yield made


@pytest.mark.sandbox
def test_a_test_the_reference_is_flaky_in_applies_to_no_candidate(evaluator: Evaluator) -> None:
    result = evaluator.score(TASK / "candidates" / "steady.py")
    coin = next(t for t in result.tests if t.nodeid.endswith("test_coin"))
    assert coin.outcome == "not_applicable"
    assert coin.message is not None
    assert coin.message.startswith("not applicable: the reference is flaky in it (its outcomes")
    assert "failed" in coin.message
    assert result.signal("pass_rate") == 1.0  # 2 of 2 applicable


@pytest.mark.sandbox
def test_repeats_name_flaky_tests_and_give_intervals(evaluator: Evaluator) -> None:
    steady = evaluator.score(TASK / "candidates" / "steady.py", repeats=3)
    summary = steady.extra["repeats"]
    assert summary["k"] == 3
    assert summary["flaky_tests"] == []
    rate = summary["signals"]["pass_rate"]
    assert rate["low"] == rate["high"] == rate["mean"] == 1.0  # deterministic: no width
    assert len(summary["signals"]["duration_s"]["values"]) == 3
    flaky = evaluator.score(TASK / "candidates" / "flaky_double.py", repeats=RUNS)
    found = flaky.extra["repeats"]
    assert found["flaky_tests"] == ["tests/test_coin.py::test_double"]
    rate = found["signals"]["pass_rate"]
    assert 0.5 < rate["low"] < rate["mean"] < rate["high"] < 1.0
    assert flaky.signal("pass_rate") == pytest.approx(rate["mean"])


@pytest.mark.sandbox
def test_confirm_credits_the_worse_end_of_each_interval(evaluator: Evaluator) -> None:
    confirmed = evaluator.confirm(TASK / "candidates" / "flaky_double.py", RUNS)
    summary = confirmed.extra["repeats"]
    assert confirmed.extra["confirmed"] == RUNS
    assert confirmed.signal("pass_rate") == summary["signals"]["pass_rate"]["low"]
    # The worse end, below what the repeats saw on average, wherever an outcome changed
    # (a fixed bound, 0.76, failed about 1 run in 100: 10 passes in 12 coin tosses give a
    # low end of 0.776).
    pass_rate = summary["signals"]["pass_rate"]
    if summary["flaky_tests"]:
        assert (confirmed.signal("pass_rate") or 0.0) < pass_rate["mean"]
    assert confirmed.signal("duration_s") == summary["signals"]["duration_s"]["high"]
    steady = evaluator.confirm(TASK / "candidates" / "steady.py", 3)
    assert steady.signal("pass_rate") == 1.0  # a steady candidate loses nothing


@pytest.mark.sandbox
def test_a_rejected_repeat_ends_the_repeats(tmp_path: Path, evaluator: Evaluator) -> None:
    cheat = tmp_path / "cheat.py"
    cheat.write_text(
        "import os\n\ndef double(x):\n    os._exit(0)\n\n"
        "def triple(x):\n    return 3 * x\n\ndef coin():\n    return True\n",
        encoding="utf-8",
    )
    result = evaluator.score(cheat, repeats=5)
    assert result.integrity.rejected
    assert result.extra["repeats"]["k"] == 1
    assert "stopped" in result.extra["repeats"]


def test_bad_repeats_are_one_line_errors(evaluator: Evaluator) -> None:
    with pytest.raises(ConfigError, match="repeats must be a whole number of 1 or more"):
        evaluator.score(TASK / "candidates" / "steady.py", repeats=0)
    with pytest.raises(ConfigError, match="reference_repeats must be 1 or more"):
        Evaluator(TASK / "tests", reference=TASK / "reference", reference_repeats=0)
