"""``scorewright verify --dataset``: real tasks in SWE-bench's instance format, several at
once, validated (gold and empty patches), one JSON line each, resumable; a task whose lists
do not hold at its base is ``invalid``, never a verdict."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks.verify_tasks import TASKS, Built, FetchError, build, instance_line, patches
from pytest_scorewright.result import Integrity, ScoreResult
from pytest_scorewright.verify.dataset import _flipping, _resolved, summary
from pytest_scorewright.verify.task_verdict import Verdict
from tests.verify.gitrepo import one_commit

pytestmark = pytest.mark.sandbox  # forks real sandboxes (and may download from PyPI)

CHOSEN = ("semver-replace-subclass", "boltons-research-enter", "pathspec-match-file-bool")


def _instance(built: Built, **changes: Any) -> dict[str, Any]:
    return instance_line(built, **changes)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_scorewright.cli", "verify", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Built]]:
    root = tmp_path_factory.mktemp("dataset")
    repos = root / "repos"
    repos.mkdir()
    built: dict[str, Built] = {}
    for task in TASKS:
        if task.name in CHOSEN:
            try:
                built[task.name] = build(task, repos)
            except FetchError as exc:
                pytest.skip(f"{task.dist} could not be downloaded from PyPI: {exc}")
    return repos, built


def test_a_dataset_is_verified_with_gold_and_empty_checks_and_resumed(
    dataset: tuple[Path, dict[str, Built]], tmp_path: Path
) -> None:
    repos, built = dataset
    semver, boltons, pathspec = (built[name] for name in CHOSEN)
    # The fail-to-pass and pass-to-pass lists swapped: the "fail-to-pass" test passes at the
    # base, so an empty patch would score: an invalid instance, not a verdict.
    swapped = _instance(
        pathspec,
        instance_id="swapped",
        FAIL_TO_PASS=json.dumps(list(pathspec.task.pass_to_pass)),
        PASS_TO_PASS=json.dumps(list(pathspec.task.fail_to_pass)),
    )
    lines = [_instance(semver), _instance(boltons), _instance(pathspec), swapped]
    data = tmp_path / "dataset.jsonl"
    data.write_text("".join(json.dumps(line) + "\n" for line in lines))
    predictions = tmp_path / "preds.json"  # SWE-bench's list form
    kinds = {semver: "gold", boltons: "wrong", pathspec: "conftest"}
    predictions.write_text(
        json.dumps(
            [
                {
                    "instance_id": b.task.name,
                    "model_name_or_path": "m",
                    "model_patch": patches(b)[k],
                }
                for b, k in kinds.items()
            ]
        )
    )
    out = tmp_path / "results.jsonl"
    common = ["--dataset", str(data), "--repos", str(repos), "--out", str(out)]
    done = _cli(*common, "--predictions", str(predictions), "-j", "2", "--validate", "2")
    assert done.returncode == 0, done.stderr
    found = {e["instance_id"]: e for e in map(json.loads, out.read_text().splitlines())}
    assert {k: v["status"] for k, v in found.items()} == {
        semver.task.name: "resolved",
        boltons.task.name: "unresolved",
        pathspec.task.name: "unresolved",
        "swapped": "invalid",
    }, {k: v["why"] for k, v in found.items()}
    assert found[semver.task.name]["gold_resolved"] == [True, True]
    assert found[semver.task.name]["empty_resolved"] == [False, False]
    assert "do not hold at the base" in found["swapped"]["why"]
    assert found[pathspec.task.name]["FAIL_TO_PASS"]["failure"] == list(pathspec.task.fail_to_pass)
    assert "summary" in done.stdout
    assert '"false_pass_rate": 0.0' in done.stdout
    assert '"false_fail_rate": 0.0' in done.stdout
    # Resumed: nothing is verified again, the lines stay as they were.
    before = out.read_text()
    again = _cli(*common, "--predictions", str(predictions), "--resume")
    assert again.returncode == 0, again.stderr
    assert out.read_text() == before
    assert "0 to verify" in again.stderr


def test_gold_predictions_resolve_every_valid_instance(
    dataset: tuple[Path, dict[str, Built]], tmp_path: Path
) -> None:
    repos, built = dataset
    data = tmp_path / "dataset.json"  # a JSON list this time
    data.write_text(json.dumps([_instance(b) for b in built.values()]))
    out = tmp_path / "gold.jsonl"
    done = _cli(
        "--dataset", str(data), "--repos", str(repos), "--out", str(out), "--predictions", "gold"
    )
    assert done.returncode == 0, done.stderr
    statuses = [json.loads(line)["status"] for line in out.read_text().splitlines()]
    assert statuses == ["resolved"] * len(built)


def test_dataset_mistakes_are_one_line_errors(tmp_path: Path) -> None:
    data = tmp_path / "dataset.jsonl"
    data.write_text('{"instance_id": "x"}\n')
    done = _cli("--dataset", str(data), "--predictions", "gold", "--out", str(tmp_path / "o"))
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0, done.stderr
    assert "base_commit" in done.stderr
    assert "Traceback" not in done.stderr


def _verdict(outcomes: dict[str, str], *, resolved: bool, ok: bool = True) -> Verdict:
    passed = [t for t, o in outcomes.items() if o == "passed"]
    failed = [t for t, o in outcomes.items() if o != "passed"]
    result = ScoreResult(ok, None, "evaluator", (), (), Integrity(), {})
    return Verdict("t", True, resolved, {"success": passed, "failure": failed}, {}, None,
                   result=result, outcomes=outcomes)  # fmt: skip


def test_a_test_that_flips_across_gold_runs_is_quarantined_and_not_counted() -> None:
    gold = [
        _verdict({"a": "passed", "b": "passed"}, resolved=True),
        _verdict({"a": "passed", "b": "failed"}, resolved=False),
    ]
    assert _flipping(gold) == ["b"]
    assert _resolved(gold[1], ["b"])  # b does not count; a passed
    assert not _resolved(_verdict({"a": "failed", "b": "failed"}, resolved=False), ["b"])
    # A run that did not complete forgives nothing.
    assert not _resolved(_verdict({"a": "passed", "b": "failed"}, resolved=False, ok=False), ["b"])
    assert (
        summary([{"status": "resolved", "gold_resolved": [True, False]}])["false_fail_rate"] == 0.5
    )


def test_each_instance_runs_in_its_base_venv_built_once_and_reused(
    dataset: tuple[Path, dict[str, Built]], tmp_path: Path
) -> None:
    repos, built = dataset
    chosen = [built["semver-replace-subclass"], built["pathspec-match-file-bool"]]
    data = tmp_path / "dataset.jsonl"
    data.write_text("".join(json.dumps(_instance(b)) + "\n" for b in chosen))
    cache = tmp_path / "venvs"

    def run(name: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        out = tmp_path / f"{name}.jsonl"
        done = _cli("--dataset", str(data), "--repos", str(repos), "--out", str(out),
                    "--venv-cache", str(cache), "-j", "2")  # fmt: skip
        assert done.returncode == 0, done.stderr
        # One header, the caller's: the process in the venv does not say it again.
        assert done.stderr.count("instance(s), ") == 1, done.stderr
        said = done.stdout.split("scorewright: summary ", 1)[1]
        return [json.loads(t) for t in out.read_text().splitlines()], json.loads(said)

    first, first_summary = run("first")
    second, second_summary = run("second")
    assert [e["status"] for e in first] == [e["status"] for e in second] == ["resolved"] * 2
    # Both bases declare no requirement of their own: one environment, built once.
    assert len({e["environment"]["key"] for e in first + second}) == 1
    assert [e["environment"]["reused"] for e in first] == [False, False]
    assert [e["environment"]["reused"] for e in second] == [True, True]
    assert first_summary["environment_hit_rate"] == 0.0
    assert second_summary["environment_hit_rate"] == 1.0
    assert second_summary["environment_build_s"] == 0.0
    assert len([p for p in cache.iterdir() if p.is_dir()]) == 1


def test_an_instances_own_extras_join_its_environments_requirements(tmp_path: Path) -> None:
    from pytest_scorewright.verify.dataset import Instance
    from pytest_scorewright.verify.dataset_envs import requirements_of

    repo = tmp_path / "lib"
    pyproject = (
        '[project]\nname = "lib"\nversion = "1"\ndependencies = ["six"]\n'
        '[project.optional-dependencies]\ntests-no-zope = ["hypothesis"]\n'
    )
    head = one_commit(repo, {"pyproject.toml": pyproject}, home=tmp_path)
    line = {
        "instance_id": "lib-1",
        "base_commit": head,
        "FAIL_TO_PASS": "[]",
        "repo_path": str(repo),
    }
    plain = Instance.of(line, "line 1")
    own = Instance.of({**line, "extras": ["tests-no-zope"]}, "line 1")
    assert own.extras == ("tests-no-zope",)
    assert Instance.of(own.to_line(), "again") == own
    assert "hypothesis" not in requirements_of(plain, None, [])
    assert {"six", "hypothesis"} <= set(requirements_of(own, None, []))
