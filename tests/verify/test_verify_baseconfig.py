"""Which pytest configuration file of the base a verifier reads (pytest 9's precedence), which
of its options the runs get, which are left out and why, and the conftest files above the
tests directory that come along. Plain files, no run."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_scorewright.errors import ConfigError
from pytest_scorewright.verify.baseconfig import read


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (root / "tests").mkdir(exist_ok=True)
    return root


def test_an_empty_pytest_ini_wins_over_every_other_file_in_its_directory(tmp_path: Path) -> None:
    tree = _tree(
        tmp_path,
        {
            "pytest.ini": "",
            "pyproject.toml": '[tool.pytest.ini_options]\nmarkers = ["slow"]\n',
            "setup.cfg": "[tool:pytest]\nmarkers = slow\n",
        },
    )
    config = read(tree, "tests", "tests")
    assert config.file == "pytest.ini"
    assert config.ini == {}


def test_pyproject_comes_before_tox_ini_and_setup_cfg(tmp_path: Path) -> None:
    tree = _tree(
        tmp_path,
        {
            "pyproject.toml": "[tool.pytest.ini_options]\nxfail_strict = true\n",
            "tox.ini": "[pytest]\nxfail_strict = false\n",
            "setup.cfg": "[tool:pytest]\nxfail_strict = false\n",
        },
    )
    assert read(tree, "tests", "tests").ini == {"xfail_strict": "true"}


def test_files_without_a_pytest_section_do_not_count(tmp_path: Path) -> None:
    tree = _tree(
        tmp_path,
        {
            "pyproject.toml": "[tool.black]\nline-length = 99\n",
            "tox.ini": "[tox]\nenvlist = py311\n",
            "setup.cfg": "[tool:pytest]\nfilterwarnings =\n    error\n    ignore::UserWarning\n",
        },
    )
    config = read(tree, "tests", "tests")
    assert config.file == "setup.cfg"
    assert config.ini == {"filterwarnings": "error\nignore::UserWarning"}


def test_a_file_nearer_the_tests_wins_over_the_roots(tmp_path: Path) -> None:
    tree = _tree(
        tmp_path,
        {"pytest.ini": "[pytest]\nmarkers = root\n", "tests/tox.ini": "[pytest]\nmarkers = near\n"},
    )
    config = read(tree, "tests", "tests")
    assert (config.file, config.ini, config.rootdir) == (
        "tests/tox.ini",
        {"markers": "near"},
        "tests",
    )


def test_native_toml_values_are_written_as_ini_lines(tmp_path: Path) -> None:
    tree = _tree(
        tmp_path,
        {
            "pytest.toml": '[pytest]\nmarkers = ["slow: slow", "net"]\nxfail_strict = true\n',
            "pytest.ini": "[pytest]\nmarkers = ignored\n",
        },
    )
    config = read(tree, "tests", "tests")
    assert config.file == "pytest.toml"
    assert config.ini == {"markers": "slow: slow\nnet", "xfail_strict": "true"}


def test_options_that_would_steer_the_run_are_left_out_with_why(tmp_path: Path) -> None:
    tree = _tree(
        tmp_path,
        {
            "setup.cfg": "[tool:pytest]\n"
            "addopts = -p myplugin --doctest-modules\n"
            "testpaths = tests docs\n"
            "timeout = 1\n"
            "required_plugins = pytest-timeout no-such-plugin-anywhere\n"
            "cache_dir = /tmp/x\n"
            "usefixtures = clean_env\n"
        },
    )
    config = read(tree, "tests", "tests", plugins=("pytest_timeout",))
    assert config.ini == {"usefixtures": "clean_env"}
    assert set(config.left_out) == {
        "addopts",
        "testpaths",
        "timeout",
        "required_plugins",
        "cache_dir",
    }
    assert "-p" in config.left_out["addopts"]
    assert config.left_out["required_plugins"] == (
        "not loaded in runs: no-such-plugin-anywhere (not installed)"
    )
    assert config.to_dict()["passed"] == ["usefixtures"]


def test_pythonpath_becomes_the_runs_paths_and_never_puts_the_candidate_first(
    tmp_path: Path,
) -> None:
    tree = _tree(
        tmp_path, {"setup.cfg": "[tool:pytest]\npythonpath = src tests tests/helpers lib ..\n"}
    )
    config = read(tree, "tests", "tests", code_roots=("", "src"))
    assert config.ini == {"pythonpath": "tests\ntests/helpers"}
    why = config.left_out["pythonpath"]
    assert "src (the candidate's code, already on the path)" in why
    assert "lib (the candidate's tree would come before the stdlib)" in why
    assert ".. (outside the repository)" in why


def test_conftests_above_the_tests_come_along_from_the_rootdir_down(tmp_path: Path) -> None:
    tree = _tree(
        tmp_path,
        {
            "conftest.py": "",
            "pkg/conftest.py": "",
            "pkg/setup.cfg": "[tool:pytest]\npythonpath = tests/unit\n",
            "pkg/tests/conftest.py": "",
            "pkg/tests/unit/conftest.py": "",
        },
    )
    config = read(tree, "pkg/tests/unit", "pkg/tests/unit")
    # The root's conftest lies above the rootdir (pkg/, the ini file's): pytest cuts it off.
    assert config.conftests == ("pkg/conftest.py", "pkg/tests/conftest.py")
    assert config.run_tests == "tests/tests/unit"
    assert config.ini == {"pythonpath": "tests/tests/unit"}
    # Without conftests above them, the tests are the run's tests/ itself.
    assert read(tree, "pkg/tests/unit", "pkg/tests/unit").rootdir == "pkg"
    bare = _tree(tmp_path / "bare", {"pytest.ini": "[pytest]\n"})
    assert read(bare, "tests", "tests").run_tests == "tests"


def test_a_base_config_pytest_cannot_read_is_one_line_naming_it(tmp_path: Path) -> None:
    tree = _tree(tmp_path, {"pyproject.toml": "[tool.pytest.ini_options\n"})
    with pytest.raises(ConfigError, match=r"the base's pyproject.toml cannot be read") as info:
        read(tree, "tests", "tests")
    assert "\n" not in str(info.value)
