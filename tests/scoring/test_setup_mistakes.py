"""A setup mistake is refused with one line that names it and the fix, never turned into
thousands of zero scores."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pytest_scorewright.errors import ConfigError
from pytest_scorewright.limits import Limits


def _task(root: Path) -> None:
    (root / "tests").mkdir()
    (root / "tests" / "test_topk.py").write_text(
        "from topk import top_k\n\ndef test_a():\n    assert top_k([1, 1, 2], 1) == [1]\n",
        encoding="utf-8",
    )
    (root / "reference").mkdir()
    (root / "reference" / "topk.py").write_text(
        "def top_k(xs, k):\n    return sorted(set(xs), key=xs.count, reverse=True)[:k]\n",
        encoding="utf-8",
    )
    (root / "candidate.py").write_text((root / "reference" / "topk.py").read_text())


def _score(root: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest_scorewright.cli",
            "score",
            str(root / "candidate.py"),
            "--tests",
            str(root / "tests"),
            "--reference",
            str(root / "reference"),
            "--out",
            str(root / "r.json"),
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.sandbox
def test_a_module_name_the_tests_never_import_is_refused_with_the_likely_one(
    tmp_path: Path,
) -> None:
    _task(tmp_path)
    wrong = _score(tmp_path)
    assert wrong.returncode == 2
    assert wrong.stderr.count("\n") == 1, wrong.stderr
    assert "did you mean --module topk" in wrong.stderr
    assert not (tmp_path / "r.json").exists()
    right = _score(tmp_path, "--module", "topk")
    assert right.returncode == 0, right.stderr
    assert "1/1 passed" in right.stderr


@pytest.mark.parametrize(
    ("limits", "says"),
    [
        ({"memory_mb": 5}, "memory_mb 5 is less than"),
        ({"timeout_s": 5, "test_timeout_s": 100}, "longer than the whole budget"),
    ],
)
def test_impossible_limits_are_refused(limits: dict[str, float], says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        Limits(**limits)  # type: ignore[arg-type]


@pytest.mark.slow  # starts a process, or takes seconds of CPU
def test_held_out_tests_inside_the_visible_ones_are_refused_in_one_line(tmp_path: Path) -> None:
    # `--tests .` in a task whose heldout/ sits beside tests/: the held-out tests would run
    # as visible ones, and their failures would reach the LLM.
    _task(tmp_path)
    (tmp_path / "tests" / "heldout").mkdir()
    (tmp_path / "tests" / "heldout" / "test_more.py").write_text(
        "from topk import top_k\n\ndef test_b():\n    assert top_k([2, 2, 1], 1) == [2]\n",
        encoding="utf-8",
    )
    found = _score(tmp_path, "--module", "topk", "--heldout", str(tmp_path / "tests" / "heldout"))
    assert found.returncode == 2
    assert found.stderr.count("\n") == 1, found.stderr
    assert "are inside the visible tests" in found.stderr
    assert "Traceback" not in found.stderr
    assert not (tmp_path / "r.json").exists()


def test_prepare_refuses_a_module_the_tests_never_import(tmp_path: Path) -> None:
    from pytest_scorewright.evaluator import Evaluator

    _task(tmp_path)
    with pytest.raises(ConfigError, match="did you mean --module topk"):
        Evaluator(tmp_path / "tests", reference=tmp_path / "reference").prepare()


def test_the_evaluators_signature_is_every_setting_and_a_typo_gets_a_suggestion() -> None:
    import inspect

    from pytest_scorewright.evaluator import Evaluator
    from pytest_scorewright.scoring.settings import OPTION_NAMES

    parameters = inspect.signature(Evaluator.__init__).parameters
    keywords = {n for n, p in parameters.items() if p.kind is inspect.Parameter.KEYWORD_ONLY}
    # Every setting is a typed keyword of its own (help() and the type checker see them),
    # and nothing else but the judge, which the Evaluator keeps itself.
    assert keywords == {*OPTION_NAMES, "judge"}
    assert all(parameters[n].annotation != "Any" for n in keywords)
    tests = Path(__file__).resolve().parents[1] / "corpus" / "roman" / "tests"
    with pytest.raises(
        ConfigError, match=r"^Evaluator has no option 'netwrok'; did you mean network\?$"
    ):
        Evaluator(tests, netwrok=True)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"^network must be True or False, not 'yes'$"):
        Evaluator(tests, network="yes")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"^limits must be a pytest_scorewright.Limits"):
        Evaluator(tests, limits={"timeout_s": 3})  # type: ignore[arg-type]


def test_the_frozen_settings_travel_and_build_the_same_evaluator(tmp_path: Path) -> None:
    import pickle

    from pytest_scorewright import Limits, Objective
    from pytest_scorewright.evaluator import Evaluator
    from pytest_scorewright.fanout.suite_bundle import pack_suite, settings_at

    tests = Path(__file__).resolve().parents[1] / "corpus" / "roman" / "tests"
    (tmp_path / "goal.py").write_text("def size(value):\n    return value\n")
    evaluator = Evaluator(
        tests, module=["solution", "helpers"], limits=Limits(timeout_s=7), repeats=1,
        objectives={"size": f"{tmp_path / 'goal.py'}:size"}, env={"A": "1"}, workdir=tmp_path,
    )  # fmt: skip
    settings = evaluator.settings
    assert settings.objectives["size"] == Objective(f"{tmp_path / 'goal.py'}:size")
    assert settings.portable
    # What a pipeline process receives is these settings, pickled, nothing else to convert.
    again = Evaluator.from_settings(pickle.loads(pickle.dumps(settings)))  # noqa: S301
    assert again.settings == settings
    # An executor's worker gets them with paths inside the suite's bundle, less this
    # machine's options, and builds the same Evaluator where the bundle was unpacked.
    _, portable = pack_suite(settings)
    assert (portable.tests, portable.workdir, portable.heldout) == ("tests", None, None)
    moved = settings_at(portable, tmp_path / "unpacked")
    assert moved.tests == str(tmp_path / "unpacked" / "tests")
    assert moved.limits == settings.limits
    assert moved.objectives == settings.objectives
    assert not Evaluator(tests, objectives={"size": lambda value: 1.0}).settings.portable
    with pytest.raises(ConfigError, match=r"^from_settings takes an Evaluator's settings, not "):
        Evaluator.from_settings(settings.arguments())  # type: ignore[arg-type]
    # A baseline reference's gold fix travels in the bundle beside it.
    (tmp_path / "fixed.py").write_text("def f():\n    return 1\n")
    fixed = Evaluator(
        tests, reference=tmp_path / "fixed.py", reference_baseline=True, gold=tmp_path / "fixed.py"
    ).settings
    _, portable = pack_suite(fixed)
    assert (portable.reference, portable.gold) == ("reference/fixed.py", "gold/fixed.py")
    with pytest.raises(ConfigError, match=r"^gold is the fix of a baseline reference; pass "):
        Evaluator(tests, reference=tmp_path / "fixed.py", gold=tmp_path / "fixed.py")


def test_infrastructure_error_is_public() -> None:
    import pytest_scorewright
    from pytest_scorewright.errors import InfrastructureError

    assert pytest_scorewright.InfrastructureError is InfrastructureError
    assert "InfrastructureError" in pytest_scorewright.__all__


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ("def add(a, b):\n    return a + b\n", "looks like source text, not a path; pass"),
        ("x" * 5000 + ".py", "cannot be a path"),
    ],
)
def test_source_text_given_to_score_is_one_line_naming_score_source(
    tmp_path: Path, given: str, says: str
) -> None:
    from pytest_scorewright.evaluator import Evaluator

    _task(tmp_path)
    evaluator = Evaluator(tmp_path / "tests", module="topk")
    with pytest.raises(ConfigError, match=says) as raised:
        evaluator.score(given)
    assert "\n" not in str(raised.value)
    evaluator.close()


@pytest.mark.slow  # the host probe forks
def test_a_work_directory_the_runs_cannot_see_is_refused_before_anything_starts(
    tmp_path: Path,
) -> None:
    from pytest_scorewright.evaluator import Evaluator
    from pytest_scorewright.sandbox import host

    if host.probe().namespaces_unavailable is not None:
        pytest.skip("without namespaces every run sees the host's /dev/shm")
    _task(tmp_path)
    evaluator = Evaluator(
        tmp_path / "tests", reference=tmp_path / "reference", module="topk", workdir="/dev/shm"
    )
    with pytest.raises(ConfigError, match=r"^work directory '/dev/shm' is under /dev, which"):
        evaluator.prepare()
