"""``scorewright verify`` on four real bug fixes of real libraries (semver, boltons, pathspec
twice), each task built from two PyPI sdists (benchmarks/verify_tasks.py): only the gold
patch resolves its task; an empty patch, a wrong fix, a conftest forcing passes, an edit of
the failing test, a skip, ``sys.exit(0)`` at import, a fix read from the repository's git
objects and a swap of pytest's ``CallInfo`` never do. The fifth task (more-itertools, whose
whole 1,000-test file each of the nine runs takes ~5 s) and 18 more are verified the same way
by benchmarks/verify_dataset.py (docs/verify.md has its figures)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.verify_tasks import TASKS, FetchError, RealTask, build, patches
from pytest_scorewright.verify import RepoTask, Verifier

pytestmark = pytest.mark.sandbox  # forks real sandboxes (and may download from PyPI)


#: The tasks verified here: all but the slowest (see the module's docstring).
IN_SUITE = tuple(t for t in TASKS if t.dist != "more-itertools")


@pytest.mark.parametrize("real", IN_SUITE, ids=[t.name for t in IN_SUITE])
def test_only_the_gold_patch_resolves_a_real_task(real: RealTask, tmp_path: Path) -> None:
    try:
        built = build(real, tmp_path)
    except FetchError as exc:
        pytest.skip(f"{real.dist} could not be downloaded from PyPI: {exc}")
    test_patch = tmp_path / "test.diff"
    test_patch.write_text(built.test_patch)
    task = RepoTask.of(
        built.repo,
        built.base,
        fail_to_pass=real.fail_to_pass,
        pass_to_pass=real.pass_to_pass,
        test_patch=test_patch,
        instance_id=real.name,
    )
    with Verifier(task) as verifier:
        verdicts = {k: verifier.verify(patch=p.encode()) for k, p in patches(built).items()}
    resolved = {kind for kind, verdict in verdicts.items() if verdict.resolved}
    assert resolved == {"gold"}, {k: v.why for k, v in verdicts.items()}
    gold = verdicts["gold"]
    assert gold.fail_to_pass == {"success": list(real.fail_to_pass), "failure": []}
    assert gold.pass_to_pass["failure"] == []
    assert gold.harbor_reward()["reward"] == 1.0
    # Each trick is seen for what it is, not merely scored low.
    assert verdicts["conftest"].changes.infrastructure == ("conftest.py",)
    assert verdicts["edit_test"].changes.test_files == (real.test_file,)
    assert verdicts["edit_test"].fail_to_pass["failure"] == list(real.fail_to_pass)
    skip = verdicts["skip"]
    assert skip.result is not None
    assert {skip.outcomes[i] for i in real.fail_to_pass} == {"skipped"}
    # Gaming evidence in unittest.TestCase suites (pathspec) too.
    assert "skip_from_candidate" in {r.code for r in skip.result.integrity.reasons}
    exited = verdicts["exit"]
    assert exited.result is not None
    assert not exited.result.ok
    git = verdicts["git_objects"]
    assert git.fail_to_pass["failure"] == list(real.fail_to_pass), git.outcomes
    # A patch that swaps pytest's CallInfo (a module global, no audit event) is tampering.
    swapped = verdicts["callinfo"]
    assert swapped.result is not None
    assert "pytest_tampered" in {r.code for r in swapped.result.integrity.reasons}
    report = verdicts["empty"].swebench_report()[real.name]
    assert report["resolved"] is False
    assert report["tests_status"]["FAIL_TO_PASS"]["failure"] == list(real.fail_to_pass)
