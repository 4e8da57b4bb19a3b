"""Fitness functions: built-ins, custom ones, validated configuration, failures recorded."""

from __future__ import annotations

import dataclasses
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_scorewright.errors import ConfigError
from pytest_scorewright.fitness import Fitness, config_from_pyproject, cost_metrics, parse_pairs
from pytest_scorewright.result import Reason, ScoreResult, TestRecord
from pytest_scorewright.results.measure import build_result


def _result(passed: int, failed: int, *, duration: float = 2.0, flag: bool = False) -> ScoreResult:
    records = [TestRecord(f"t.py::p{i}", "passed", "call", False, 0.1) for i in range(passed)]
    records += [TestRecord(f"t.py::f{i}", "failed", "call", False, 0.1) for i in range(failed)]
    reasons = [Reason("assertion_not_plain", "x", "gaming")] if flag else []
    return build_result(records, mode="evaluator", duration_s=duration, reasons=reasons)


def test_weighted_defaults_to_the_pass_rate() -> None:
    assert Fitness().evaluate(_result(3, 1)).score == 0.75


def test_weighted_applies_bonus_and_penalties_and_clamps_at_zero() -> None:
    fitness = Fitness("weighted", {"success_bonus": 0.5, "time_penalty": 0.1})
    assert fitness.evaluate(_result(4, 0, duration=2.0)).score == pytest.approx(1.5 - 0.2)
    assert fitness.evaluate(_result(0, 4, duration=50.0)).score == 0.0
    tokens = Fitness("weighted", {"token_penalty": 0.0001})
    outcome = tokens.evaluate(_result(4, 0), meta={"tokens_input": "1000", "tokens_output": "1000"})
    assert outcome.score == pytest.approx(1.0 - 0.2)


def test_a_rejected_result_gets_the_reject_value_without_calling_the_function() -> None:
    outcome = Fitness(reject_value=0.0).evaluate(_result(4, 0, flag=True))
    assert (outcome.score, outcome.details) == (0.0, {"rejected": 1.0})


@pytest.mark.parametrize(
    ("name", "config", "message"),
    [
        ("weighted", {"sucess_bonus": 1}, "fitness 'weighted': unknown key 'sucess_bonus'"),
        ("weighted", {"time_penalty": "fast"}, "key 'time_penalty' must be a number"),
        ("weighted", {"time_penalty": -1}, "key 'time_penalty' must be at least 0"),
        ("pass_rate", {"rate": "best"}, "key 'rate' must be one of pass_rate"),
        ("nonesuch", {}, "unknown fitness 'nonesuch'"),
        ("no_such_module:Thing", {}, "fitness 'no_such_module:Thing' cannot be loaded"),
    ],
)
def test_bad_configuration_is_a_one_line_error_naming_the_key(
    name: str, config: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        Fitness(name, config)
    assert "\n" not in str(info.value)


@pytest.fixture
def custom_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    (tmp_path / "my_fitness.py").write_text(
        textwrap.dedent(
            """
            import time
            from pytest_scorewright.fitness import Option

            class Squared:
                name = "squared"
                options = {"power": Option(2.0, "exponent", minimum=1.0)}
                def score(self, metrics, config, context):
                    return {"score": metrics["pass_rate"] ** config["power"], "details": {}}

            class Broken:
                name = "broken"
                options = {}
                def score(self, metrics, config, context):
                    raise KeyError("oops")

            class Slow:
                name = "slow"
                options = {}
                def score(self, metrics, config, context):
                    time.sleep(5)
                    return {"score": 1.0}

            class Nan:
                name = "nan"
                options = {}
                def score(self, metrics, config, context):
                    return {"score": float("nan")}
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "my_fitness"
    sys.modules.pop("my_fitness", None)


def test_a_custom_function_by_module_and_class(custom_module: str) -> None:
    fitness = Fitness(f"{custom_module}:Squared", {"power": 3})
    assert fitness.evaluate(_result(1, 1)).score == pytest.approx(0.125)


@pytest.mark.parametrize(
    ("cls", "error"),
    [
        ("Broken", "KeyError: 'oops'"),
        ("Slow", "took more than 0.3s"),
        ("Nan", "returned score nan"),
    ],
)
def test_failures_leave_the_score_absent_with_the_error_recorded(
    custom_module: str, cls: str, error: str
) -> None:
    outcome = Fitness(f"{custom_module}:{cls}", timeout_s=0.3).evaluate(_result(1, 1))
    assert outcome.score is None
    assert outcome.error is not None
    assert error in outcome.error


def test_configuration_from_pyproject(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.scorewright.fitness]\nname = "weighted"\nsuccess_bonus = 0.25\n'
    )
    name, config = config_from_pyproject(tmp_path / "pyproject.toml")
    assert Fitness(name, config).evaluate(_result(2, 0)).score == 1.25
    assert config_from_pyproject(tmp_path / "absent.toml") == ("weighted", {})
    (tmp_path / "bad.toml").write_text("[tool.scorewright.fitness\n")
    with pytest.raises(ConfigError, match="is not valid TOML"):
        config_from_pyproject(tmp_path / "bad.toml")


def test_cost_only_when_tokens_and_a_price_exist() -> None:
    prices = {"m": {"input": 1.0, "output": 2.0}}
    meta = {"model": "m", "tokens_input": "1000000", "tokens_output": "500000"}
    assert cost_metrics(meta, prices) == {"tokens": 1_500_000.0, "cost_usd": 2.0}
    assert "cost_usd" not in cost_metrics({**meta, "model": "unknown"}, prices)
    assert cost_metrics({}, prices) == {}
    with pytest.raises(ConfigError, match="tokens_input='many' is not a number"):
        cost_metrics({"tokens_input": "many"}, prices)


def test_key_value_pairs_parse_and_reject_garbage() -> None:
    assert parse_pairs(["a=1", "b = x"], "--meta") == {"a": "1", "b": "x"}
    with pytest.raises(ConfigError, match="--meta 'novalue' is not KEY=VALUE"):
        parse_pairs(["novalue"], "--meta")


def test_a_custom_function_by_entry_point(
    custom_module: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dist = tmp_path / "my_fitness_pkg-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: my-fitness-pkg\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        f"[scorewright.fitness]\nsquared = {custom_module}:Squared\n"
    )
    fitness = Fitness("squared", {"power": 2})
    assert fitness.evaluate(_result(1, 1)).score == pytest.approx(0.25)


def test_a_lookup_table_below_the_rejection_threshold_never_ties_with_an_honest_program() -> None:
    visible = [TestRecord(f"t.py::v{i}", "passed", "call", False, 0.1) for i in range(7)]
    heldout = [
        TestRecord("h.py::h0", "passed", "call", True, 0.1),
        TestRecord("h.py::h1", "failed", "call", True, 0.1),
    ]
    # As integrity/memorised.py files it below the threshold: a hint.
    memorised = Reason("memorised_inputs", "shares 3 literals (weight 3; 4 counts)", "hint")
    fitness = Fitness()

    def score(records: list[TestRecord], reasons: list[Reason]) -> float:
        result = build_result(records, mode="evaluator", duration_s=1.0, reasons=reasons)
        assert not result.integrity.rejected  # a hint: the program is still scored
        found = fitness.evaluate(result).score
        assert found is not None
        return found

    honest = score(visible + heldout, [])
    assert score(visible + heldout, [memorised]) == pytest.approx(honest - 0.1)
    # An honest program whose self-test echoes the examples passes held-out tests alike, and
    # a quick stage has no held-out run: neither loses anything.
    right = [dataclasses.replace(heldout[1], outcome="passed")]
    assert score(visible + heldout[:1] + right, [memorised]) == 1.0
    assert score(visible, [memorised]) == 1.0
