"""Where the result goes: options, precedence, atomic writes, and clear errors."""

from __future__ import annotations

import json

import pytest

from tests.conftest import RunScored, validate


def test_unwritable_output_path_is_a_usage_error_at_start(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_a(): pass")
    (pytester.path / "afile").write_text("not a directory")
    result = pytester.runpytest("--scorewright-out=afile/fitness.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --scorewright-out: cannot write the result to *afile*"])
    assert "Traceback" not in result.stderr.str()
    result.stdout.no_fnmatch_line("*passed*")


def test_a_directory_as_output_path_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_a(): pass")
    pytester.mkdir("outdir")
    result = pytester.runpytest("--scorewright-out=outdir")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*it is a directory; give a file path*"])


def test_parent_directories_are_created_and_no_temp_file_is_left(
    pytester: pytest.Pytester, run_scored: RunScored
) -> None:
    pytester.makepyfile("def test_a(): pass")
    scored = run_scored(out="deep/er/fitness.json")
    assert scored.data["ok"] is True
    assert sorted(p.name for p in (pytester.path / "deep/er").iterdir()) == ["fitness.json"]


def test_ini_environment_and_command_line_precedence(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile("def test_a(): pass")
    pytester.makeini("[pytest]\nscorewright_out = from_ini.json\n")
    pytester.runpytest()
    assert (pytester.path / "from_ini.json").exists()
    monkeypatch.setenv("SCOREWRIGHT_OUT", "from_env.json")
    pytester.runpytest()
    assert (pytester.path / "from_env.json").exists()
    pytester.runpytest("--scorewright-out=from_cli.json")
    assert (pytester.path / "from_cli.json").exists()
    validate(json.loads((pytester.path / "from_cli.json").read_text()))


def test_an_empty_setting_names_its_source(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile("def test_a(): pass")
    monkeypatch.setenv("SCOREWRIGHT_OUT", "  ")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: $SCOREWRIGHT_OUT is empty: give a file path*"])


def test_terminal_summary_names_the_headline_numbers_and_the_file(
    pytester: pytest.Pytester, run_scored: RunScored
) -> None:
    pytester.makepyfile(
        """
        import pytest
        def test_a(): pass
        @pytest.mark.heldout
        def test_b(): assert 0
        """
    )
    scored = run_scored()
    scored.run.stdout.fnmatch_lines(
        [
            "scorewright: 1/2 passed (50.0%), held-out 0/1 (0.0%), divergence +1.00",
            "scorewright: wrote *fitness.json",
        ]
    )


def test_without_the_option_the_plugin_writes_and_prints_nothing(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile("def test_a(): pass")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.stdout.no_fnmatch_line("*scorewright:*")
    assert sorted(p.name for p in pytester.path.iterdir()) == [
        "test_a.py".replace(
            "test_a", "test_without_the_option_the_plugin_writes_and_prints_nothing"
        )
    ]


def test_heldout_marker_is_registered_for_strict_markers(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("import pytest\n@pytest.mark.heldout\ndef test_a(): pass")
    result = pytester.runpytest("--strict-markers")
    result.assert_outcomes(passed=1)
    result = pytester.runpytest("--markers")
    result.stdout.fnmatch_lines(["@pytest.mark.heldout: a held-out test*"])
