"""The ScoreResult model, its shipped schema, and the `scorewright` command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from pytest_scorewright import SCHEMA_VERSION, ResultFormatError, ScoreResult
from pytest_scorewright.result import Reason, TestRecord, write_atomic
from pytest_scorewright.results.measure import build_result
from pytest_scorewright.schema import schema
from tests.conftest import validate


def _result() -> ScoreResult:
    records = [
        TestRecord("t.py::a", "passed", "call", False, 0.01),
        TestRecord("t.py::b", "failed", "call", True, 0.02, "AssertionError"),
    ]
    return build_result(records, mode="plugin", duration_s=0.5)


def test_a_result_round_trips_through_json_and_validates() -> None:
    result = _result()
    data = json.loads(result.to_json())
    validate(data)
    again = ScoreResult.from_json(result.to_json())
    assert again == result


def test_a_version_1_file_is_still_read_with_defaults_for_what_it_lacks() -> None:
    data = json.loads(_result().to_json())
    data["schema_version"] = 1
    del data["infrastructure"]
    again = ScoreResult.from_dict(data)
    assert again.schema_version == SCHEMA_VERSION
    assert again.infrastructure is False
    assert again.tests == _result().tests


def test_severities_policy_and_credit_round_trip_and_validate() -> None:
    records = [TestRecord("t.py::a", "passed", "call", False, 0.01)]
    reasons = [Reason("pytest_tampered", "x", "tamper"), Reason("source_atexit", "y", "hint")]
    result = build_result(records, mode="evaluator", duration_s=0.5, reasons=reasons)
    data = json.loads(result.to_json())
    validate(data)
    assert data["integrity"]["policy"] == "default"
    assert [r["severity"] for r in data["integrity"]["reasons"]] == ["tamper", "hint"]
    assert data["tests"][0] == {**data["tests"][0], "outcome": "passed", "credited": False}
    assert ScoreResult.from_json(result.to_json()) == result
    assert result.signal("pass_rate") == 0.0


def test_a_version_2_file_from_before_severities_reads_as_warn_only_hints() -> None:
    result = build_result(
        [TestRecord("t.py::a", "passed", "call", False, 0.01)],
        mode="evaluator",
        duration_s=0.5,
        reasons=[Reason("always_equal", "x", "gaming")],
        policy="warn_only",
    )
    data = json.loads(result.to_json())
    del data["integrity"]["policy"]
    del data["integrity"]["reasons"][0]["severity"]
    del data["tests"][0]["credited"]
    validate(data)
    again = ScoreResult.from_dict(data)
    assert again.integrity.policy == "warn_only"
    assert again.integrity.reasons[0].severity == "hint"
    assert again.tests[0].credited is True


def test_the_schema_rejects_an_unknown_outcome() -> None:
    data = json.loads(_result().to_json())
    data["tests"][0]["outcome"] = "sort_of_passed"
    with pytest.raises(jsonschema.ValidationError):
        validate(data)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "not a ScoreResult: invalid JSON"),
        ("[]", "the JSON document is not an object"),
        ('{"schema_version": 99}', "schema_version 99 is not supported"),
        ('{"schema_version": 1}', "missing key"),
    ],
)
def test_malformed_results_give_one_line_errors(text: str, message: str) -> None:
    with pytest.raises(ResultFormatError, match=message) as info:
        ScoreResult.from_json(text)
    assert "\n" not in str(info.value)


def test_a_nan_signal_is_rejected_when_read() -> None:
    data = json.loads(_result().to_json())
    data["signals"][0]["value"] = float("nan")
    with pytest.raises(ResultFormatError, match="not a finite number"):
        ScoreResult.from_dict(data)


def test_write_atomic_replaces_whole_files(tmp_path: Path) -> None:
    target = tmp_path / "r.json"
    write_atomic(target, "old")
    write_atomic(target, "new")
    assert target.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_scorewright.cli", *args],
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.slow  # starts a process, or takes seconds of CPU
def test_scorewright_schema_prints_the_shipped_schema() -> None:
    done = _cli("schema")
    assert done.returncode == 0
    assert json.loads(done.stdout) == schema()
    jsonschema.Draft202012Validator.check_schema(schema())


@pytest.mark.slow  # starts a process, or takes seconds of CPU
def test_scorewright_show_prints_headlines_and_fails_cleanly(tmp_path: Path) -> None:
    path = _result().write(tmp_path / "r.json")
    done = _cli("show", str(path))
    assert done.returncode == 0
    assert "1/2 passed (50.0%)" in done.stdout
    missing = _cli("show", str(tmp_path / "nope.json"))
    assert missing.returncode == 2
    assert missing.stderr.startswith("scorewright: error: cannot read")
    assert len(missing.stderr.strip().splitlines()) == 1
    (tmp_path / "bytes.json").write_bytes(b"\xff\xfe not text")
    binary = _cli("show", str(tmp_path / "bytes.json"))
    assert binary.returncode == 2
    assert binary.stderr.strip().endswith("not UTF-8 text"), binary.stderr
    assert len(binary.stderr.strip().splitlines()) == 1


@pytest.mark.slow  # starts a process, or takes seconds of CPU
def test_an_unknown_option_gets_the_commands_usage_and_the_closest_option() -> None:
    done = _cli("score", "c.py", "--tests", "t", "--heldot", "h")
    assert done.returncode == 2
    assert done.stderr.startswith("usage: scorewright score ")
    assert done.stderr.strip().endswith(
        "scorewright score: error: unrecognized arguments: --heldot h (did you mean --heldout?)"
    )


@pytest.mark.slow  # starts a process, or takes seconds of CPU
def test_every_option_says_what_it_does_and_its_default() -> None:
    import argparse

    from pytest_scorewright.cli import build_parser

    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    missing = []
    for name, command in commands.choices.items():
        for action in command._actions:
            if not action.option_strings or isinstance(action, argparse._HelpAction):
                continue
            text = action.help or ""
            default = action.default
            said = "default" in text
            if not text or (default not in (None, False, [], argparse.SUPPRESS) and not said):
                missing.append(f"{name} {action.option_strings[-1]}")
    assert not missing, missing
    help_text = _cli("score", "--help").stdout
    assert "(RLIMIT_AS; default 2048)" in help_text
    assert "(RLIMIT_CPU; default: --timeout rounded up)" in " ".join(help_text.split())
