"""A listed test flaky at the base is quarantined, not the instance refused: a real git
repository (a tiny package, made here), a real Verifier, and a pass-to-pass test that fails in
the base's first run and passes in every later one (a timing-sensitive test, as SWE-smith's
gold patches that fail now and then). It is named in every verdict and decides none; where
every fail-to-pass test is flaky, nothing is left to decide and the task is invalid."""

from __future__ import annotations

import textwrap
import time
from pathlib import Path

import pytest

from pytest_scorewright.verify import RepoTask, Verifier
from pytest_scorewright.verify.verifier import InvalidTask
from tests.verify.gitrepo import one_commit

pytestmark = pytest.mark.sandbox  # forks real sandboxes

BUGGY = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
TESTS = textwrap.dedent(
    """
    import os
    import time

    from calc import add


    def test_add():
        assert add(2, 3) == 5


    def test_zero():
        assert add(0, 0) == 0


    def test_timing_sensitive():
        until = float(os.environ.get("UNTIL", "0"))
        if time.time() < until:
            time.sleep(until - time.time())
            raise AssertionError("too early")


    def test_passes_only_early():
        until = float(os.environ.get("EARLY_UNTIL", "0"))
        if time.time() < until:
            time.sleep(until - time.time())
            return
        raise AssertionError("too late")
    """
)
F2P = ("tests/test_calc.py::test_add",)
FLAKY = "tests/test_calc.py::test_timing_sensitive"
#: Passes in the base's first run (which waits for UNTIL) and fails in every later one.
EARLY = "tests/test_calc.py::test_passes_only_early"


def _repo(root: Path) -> tuple[Path, str]:
    repo = root / "calc-repo"
    files = {"calc.py": BUGGY, "tests/test_calc.py": TESTS}
    return repo, one_commit(repo, files, home=root)


def _gold() -> bytes:
    old, new = BUGGY.splitlines()[1], FIXED.splitlines()[1]
    hunk = f"@@ -1,2 +1,2 @@\n def add(a, b):\n-{old}\n+{new}\n"
    return f"--- a/calc.py\n+++ b/calc.py\n{hunk}".encode()


def test_a_test_flaky_at_the_base_is_quarantined_and_decides_no_verdict(tmp_path: Path) -> None:
    repo, base = _repo(tmp_path)
    task = RepoTask.of(
        repo,
        base,
        fail_to_pass=F2P,
        pass_to_pass=("tests/test_calc.py::test_zero", FLAKY),
        instance_id="calc-add",
    )
    # The base's first run waits for UNTIL and fails the test; the reference is run again
    # before anything is refused, and passes it then.
    with Verifier(task, env={"UNTIL": str(time.time() + 6)}) as verifier:
        gold = verifier.verify(patch=_gold())
        empty = verifier.verify(patch=b"")
        assert verifier.quarantined == (FLAKY,)
    assert gold.resolved, gold.why
    assert gold.quarantined == (FLAKY,)
    assert FLAKY not in gold.pass_to_pass["success"] + gold.pass_to_pass["failure"]
    assert gold.details()["quarantined"] == [FLAKY]
    assert not empty.resolved
    assert empty.fail_to_pass["failure"] == list(F2P)


def test_a_task_whose_every_fail_to_pass_test_is_flaky_is_invalid_in_one_line(
    tmp_path: Path,
) -> None:
    repo, base = _repo(tmp_path)
    task = RepoTask.of(
        repo, base, fail_to_pass=(EARLY,), pass_to_pass=("tests/test_calc.py::test_zero",)
    )
    with (
        pytest.raises(InvalidTask, match="every fail-to-pass test is flaky at the base") as got,
        Verifier(task, env={"EARLY_UNTIL": str(time.time() + 6)}) as verifier,
    ):
        verifier.verify(patch=b"")
    assert "\n" not in str(got.value)
