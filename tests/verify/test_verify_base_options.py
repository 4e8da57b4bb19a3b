"""The base's own pytest configuration reaches every run, and the candidate's never does: on
the real semver task (benchmarks/verify_tasks.py) with ``error`` added to the base's
``filterwarnings``, a fix that warns no longer resolves, whatever the candidate writes in its
own setup.cfg; and a conftest.py above the tests directory is loaded from the base."""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import pytest

from benchmarks.verify_tasks import TASKS, FetchError, build, diff, with_function
from pytest_scorewright.verify import RepoTask, Verifier

pytestmark = pytest.mark.sandbox  # forks real sandboxes (and may download from PyPI)

SEMVER = next(t for t in TASKS if t.dist == "semver")


def _commit(repo: Path, message: str) -> str:
    env = {"GIT_CONFIG_NOSYSTEM": "1", "HOME": str(repo.parent)}
    ident = ["-c", "user.name=task", "-c", "user.email=task@example.invalid"]
    for args in (["add", "-A"], [*ident, "commit", "-q", "-m", message]):
        subprocess.run(["git", *args], cwd=repo, check=True, env=env, capture_output=True)
    proc = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repo, check=True, env=env, capture_output=True, text=True
    )
    return proc.stdout.strip()


def test_the_bases_filterwarnings_decide_and_the_candidates_setup_cfg_does_not(
    tmp_path: Path,
) -> None:
    try:
        built = build(SEMVER, tmp_path)
    except FetchError as exc:
        pytest.skip(f"semver could not be downloaded from PyPI: {exc}")
    setup_cfg = built.repo / "setup.cfg"
    original = setup_cfg.read_text()
    ignore = "filterwarnings = \n\tignore:Function 'semver.*:DeprecationWarning"
    assert ignore in original
    # The project's filter list, an ``error`` first (the last match wins): warnings fail tests.
    strict = original.replace(ignore, ignore.replace("= \n", "= \n\terror\n"))
    setup_cfg.write_text(strict)
    base = _commit(built.repo, "Warnings are errors")
    test_patch = tmp_path / "test.diff"
    test_patch.write_text(built.test_patch)
    task = RepoTask.of(
        built.repo,
        base,
        fail_to_pass=SEMVER.fail_to_pass,
        pass_to_pass=SEMVER.pass_to_pass,
        test_patch=test_patch,
        instance_id=SEMVER.name,
    )
    source = built.base_file(SEMVER.source)
    new = (SEMVER.directory(SEMVER.new) / SEMVER.source).read_text()
    fixed = with_function(source, new, SEMVER.function)
    line = next(x for x in fixed.splitlines() if SEMVER.wrong[0] in x)
    indent = line[: len(line) - len(line.lstrip())]
    warning = f'{indent}__import__("warnings").warn("replace() will change", DeprecationWarning)\n'
    warns = fixed.replace(line + "\n", warning + line + "\n")
    # The candidate also takes ``error`` out of its own setup.cfg: never read.
    relaxed = diff(SEMVER.source, source, warns) + diff("setup.cfg", strict, original)
    with Verifier(task) as verifier:
        gold = verifier.verify(patch=built.gold.encode())
        warned = verifier.verify(patch=relaxed.encode())
        config = verifier.config
    assert config.file == "setup.cfg"
    assert config.ini["filterwarnings"].splitlines()[0] == "error"
    assert config.ini["pythonpath"] == "tests"  # its `src` is the candidate's own path
    assert {"addopts", "testpaths", "norecursedirs"} <= set(config.left_out)
    assert gold.resolved, gold.why
    assert not warned.resolved
    assert warned.outcomes[SEMVER.fail_to_pass[0]] == "failed"
    assert warned.result is not None
    failed = next(t for t in warned.result.tests if t.nodeid.endswith("test_replace_from_subclass"))
    assert "replace() will change" in (failed.message or "")  # the warning, as an error
    assert warned.changes.infrastructure == ("setup.cfg",)
    recorded = warned.details()["base_pytest_config"]
    assert recorded["file"] == "setup.cfg"
    assert "addopts" in recorded["left_out"]


def test_a_conftest_above_the_tests_directory_is_the_bases(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    files = {
        "conftest.py": """
            import pytest

            @pytest.fixture
            def answer():
                return 42
        """,
        "pytest.ini": "[pytest]\nmarkers =\n    answer: needs the answer\nstrict_markers = true\n",
        "calc/__init__.py": "def double(x):\n    return x\n",
        "tests/unit/test_calc.py": """
            import pytest

            from calc import double

            @pytest.mark.answer
            def test_double(answer):
                assert double(answer) == 84

            def test_answer(answer):
                assert answer == 42
        """,
    }
    files = {name: textwrap.dedent(text).lstrip() for name, text in files.items()}
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    base = _commit(repo, "base")
    task = RepoTask.of(
        repo,
        base,
        fail_to_pass=["tests/unit/test_calc.py::test_double"],
        pass_to_pass=["tests/unit/test_calc.py::test_answer"],
    )
    fix = diff(
        "calc/__init__.py", "def double(x):\n    return x\n", "def double(x):\n    return 2 * x\n"
    )
    # The candidate's own root conftest would break the fixture: it is not loaded.
    cheat = diff("conftest.py", files["conftest.py"], files["conftest.py"].replace("42", "0"))
    with Verifier(task) as verifier:
        fixed = verifier.verify(patch=fix.encode())
        cheated = verifier.verify(patch=(fix + cheat).encode())
        config = verifier.config
    assert config.conftests == ("conftest.py",)
    assert config.run_tests == "tests/tests"
    assert fixed.resolved, fixed.why
    assert cheated.changes.infrastructure == ("conftest.py",)
    assert cheated.outcomes == fixed.outcomes
