"""The CLI options for real projects' suites reach the Evaluator they build."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_scorewright import cli, command_options
from pytest_scorewright.errors import ConfigError
from pytest_scorewright.evaluator import Evaluator


def _evaluator(tmp_path: Path, *argv: str) -> Evaluator:
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_two.py").write_text(
        "import first, second\n\ndef test_both():\n    assert first.ONE + second.TWO == 3\n"
    )
    reference = tmp_path / "ref"
    reference.mkdir()
    (reference / "first.py").write_text("ONE = 1\n")
    (reference / "second.py").write_text("TWO = 2\n")
    argv = ("--reference", str(reference), *argv)
    args = cli.build_parser().parse_args(["score", str(reference), "--tests", str(tests), *argv])
    return command_options.evaluator_from_args(args)


@pytest.mark.sandbox
def test_real_project_options_reach_the_evaluator(tmp_path: Path) -> None:
    with _evaluator(
        tmp_path,
        *("--module", "first", "--module", "second", "--reference-baseline"),
        *("--test-timeout", "0", "--processes", "256", "--plugin", "anyio.pytest_plugin"),
        *("--ini", "filterwarnings=error", "--ini", "filterwarnings=ignore::UserWarning"),
        *("--ini", "xfail_strict=true"),
    ) as ev:
        assert ev._settings.modules == ("first", "second")
        assert ev._settings.reference_baseline is True
        assert ev.limits.test_seconds == 0
        assert ev.limits.processes == 256
        assert ev.settings.plugins == ("pytest_timeout", "anyio.pytest_plugin")
        assert ev.settings.ini == {
            "filterwarnings": "error\nignore::UserWarning",
            "xfail_strict": "true",
        }
        assert ev.score(tmp_path / "ref").signal("pass_rate") == 1.0


def test_a_negative_per_test_limit_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.build_parser().parse_args(["score", "c.py", "--tests", ".", "--test-timeout", "-1"])
    assert exited.value.code == 2
    assert "'-1' must be 0 or a positive number" in capsys.readouterr().err


def test_an_ini_option_without_a_value_is_a_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--ini 'novalue' is not KEY=VALUE"):
        _evaluator(tmp_path, "--ini", "novalue")
