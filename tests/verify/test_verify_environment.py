"""A repository task's environment (verify/environment.py): the base commit's requirements
read, a venv built from them once and reused, and the verdict in it the same as here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from benchmarks.verify_tasks import TASKS, FetchError, build, patches
from pytest_scorewright import cli
from pytest_scorewright.errors import ConfigError
from pytest_scorewright.verify.environment import READY, base_requirements


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def test_requirements_come_from_the_base_files_without_the_project_itself(tmp_path: Path) -> None:
    base = _write(
        tmp_path,
        {
            "requirements.txt": """
                # runtime
                attrs>=23  # inline comment
                -r requirements/extra.txt
                -e .
                ./vendored/pkg
                --index-url https://example.invalid/simple
            """,
            "requirements/extra.txt": "idna\n-r ../../outside.txt\n",
            "requirements-test.txt": "six\n",
            "pyproject.toml": """
                [project]
                name = "My.Project"
                dependencies = ["packaging>=23"]
                [project.optional-dependencies]
                test = ["My_Project[speed]", "toolz"]
                speed = ["tomli"]
                [dependency-groups]
                lint = ["iniconfig"]
            """,
            "setup.cfg": """
                [options]
                install_requires =
                    execnet
                [options.extras_require]
                docs = pluggy
            """,
        },
    )
    assert base_requirements(base) == ["six", "attrs>=23", "idna", "packaging>=23", "execnet"]
    with_extras = base_requirements(base, ["test", "lint", "docs"])
    assert set(with_extras) - set(base_requirements(base)) == {
        "toolz",
        "tomli",
        "iniconfig",
        "pluggy",
    }


def test_an_extra_the_base_does_not_declare_is_a_one_line_error(tmp_path: Path) -> None:
    base = _write(tmp_path, {"pyproject.toml": '[project]\nname = "p"\ndependencies = []\n'})
    with pytest.raises(ConfigError, match=r"^--extra 'tset' is not an extra") as caught:
        base_requirements(base, ["tset"])
    assert "\n" not in str(caught.value)


def test_python_and_venv_together_are_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = cli.main(
        [
            *("verify", "--repo", str(tmp_path), "--base", "HEAD", "--tree", str(tmp_path)),
            *("--fail-to-pass", "tests/test_a.py::test_a", "--python", sys.executable, "--venv"),
        ]
    )
    assert code == 2
    assert "--python names an environment and --venv builds one" in capsys.readouterr().err


def _verify(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "SCOREWRIGHT_VERIFY_PYTHON"}
    return subprocess.run(
        [sys.executable, "-m", "pytest_scorewright.cli", "verify", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
        env=env,
        timeout=300,
    )


@pytest.mark.sandbox
def test_a_task_venv_is_built_once_reused_and_gives_the_verdict_of_this_environment(
    tmp_path: Path,
) -> None:
    real = TASKS[0]  # semver's fix of Version.replace
    try:
        built = build(real, tmp_path)
    except FetchError as exc:
        pytest.skip(f"{real.dist} could not be downloaded from PyPI: {exc}")
    # The task's base declares a requirement (semver has none of its own).
    (built.repo / "requirements.txt").write_text("six\n")
    git = ["git", "-C", str(built.repo), "-c", "user.name=t", "-c", "user.email=t@t.invalid"]
    subprocess.run([*git, "add", "requirements.txt"], check=True)
    subprocess.run([*git, "commit", "-qm", "Require six"], check=True)
    base = subprocess.run(
        [*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    (tmp_path / "test.diff").write_text(built.test_patch)
    (tmp_path / "model.diff").write_text(patches(built)["gold"])
    cache = tmp_path / "venvs"
    task = [
        *("--repo", str(built.repo), "--base", base, "--test-patch", str(tmp_path / "test.diff")),
        *("--patch", str(tmp_path / "model.diff")),
        *("--fail-to-pass", json.dumps(list(real.fail_to_pass))),
        *("--pass-to-pass", json.dumps(list(real.pass_to_pass))),
    ]

    def verdict(name: str, *extra: str) -> tuple[dict[str, object], str]:
        report = tmp_path / f"{name}.json"
        proc = _verify([*task, "--report", str(report), *extra], tmp_path)
        assert proc.returncode == 0, proc.stderr
        found = json.loads(report.read_text())["task"]
        return {k: found[k] for k in ("resolved", "tests_status")}, proc.stderr

    here, _ = verdict("here")
    first, built_err = verdict("first", "--venv-cache", str(cache))
    second, reused_err = verdict("second", "--venv-cache", str(cache))
    assert "scorewright: built the task's venv" in built_err
    assert "scorewright: reused the task's venv" in reused_err
    venvs = [p for p in cache.iterdir() if p.is_dir()]
    assert len(venvs) == 1
    assert (venvs[0] / READY).is_file()
    python = venvs[0] / "bin" / "python"
    assert subprocess.run([python, "-c", "import six"], check=False).returncode == 0
    named, _ = verdict("named", "--python", str(python))  # an environment the user names
    assert here["resolved"] is True
    assert first == second == named == here
