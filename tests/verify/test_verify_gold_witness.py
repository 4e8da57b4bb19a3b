"""A fix that returns the library's own objects is not taken for a liar: the gold patch as a
second trusted run. A fail-to-pass test fails at the base before its assertion (the feature
is missing), so the base gives no evidence there; the fix returns an object of the library's
own with its own ``==`` (as tomlkit's items compare equal to plain values). Held against
nothing, that reads as ``assertion_not_plain`` and the gold itself is refused; held against
the gold's run, it resolves, while an always-equal liar at the same assertion is still
refused (the gold's run failed the impossible canary there; the liar passes it). A real git
repository, a real Verifier, real runs."""

from __future__ import annotations

import difflib
import textwrap
from pathlib import Path

import pytest

from pytest_scorewright.verify import RepoTask, Verifier
from pytest_scorewright.verify.verifier import InvalidTask
from tests.verify.gitrepo import one_commit

pytestmark = pytest.mark.sandbox  # forks real sandboxes

BASE = textwrap.dedent(
    """
    def plain(text):
        return text.strip()


    def parse(text):
        raise NotImplementedError("quoted keys")
    """
)
FIXED = textwrap.dedent(
    """
    def plain(text):
        return text.strip()


    class Key:
        def __init__(self, name):
            self.name = name

        def __eq__(self, other):
            if isinstance(other, Key):
                other = other.name
            return isinstance(other, str) and self.name == other

        __hash__ = None


    def parse(text):
        return Key(text.strip().strip('"'))
    """
)
LIAR = textwrap.dedent(
    """
    def plain(text):
        return text.strip()


    class Key:
        def __eq__(self, other):
            return True

        __hash__ = None


    def parse(text):
        return Key()
    """
)
TESTS = textwrap.dedent(
    """
    from keys import parse, plain


    def test_plain():
        assert plain(" a ") == "a"


    def test_quoted():
        assert parse('"a b"') == "a b"
    """
)
F2P = ("tests/test_keys.py::test_quoted",)
P2P = ("tests/test_keys.py::test_plain",)


def _diff(new: str) -> bytes:
    lines = difflib.unified_diff(
        BASE.splitlines(keepends=True), new.splitlines(keepends=True), "a/keys.py", "b/keys.py"
    )
    return "".join(lines).encode()


@pytest.fixture
def task(tmp_path: Path) -> RepoTask:
    repo = tmp_path / "keys-repo"
    base = one_commit(repo, {"keys.py": BASE, "tests/test_keys.py": TESTS}, home=tmp_path)
    return RepoTask.of(repo, base, fail_to_pass=F2P, pass_to_pass=P2P)


def test_the_gold_run_is_the_evidence_where_the_base_never_reached_the_assertion(
    task: RepoTask,
) -> None:
    with Verifier(task, gold=_diff(FIXED)) as verifier:
        gold = verifier.verify(patch=_diff(FIXED))
        liar = verifier.verify(patch=_diff(LIAR))
        empty = verifier.verify(patch=b"")
    assert gold.resolved, gold.why
    assert not liar.resolved
    assert liar.result is not None
    codes = {r.code for r in liar.result.integrity.reasons}
    assert codes & {"canary_passed", "assertion_not_plain"}, codes
    assert not empty.resolved
    # Without the gold's run, nothing is known at that assertion: the fix itself is refused.
    with Verifier(task) as blind:
        refused = blind.verify(patch=_diff(FIXED))
    assert not refused.resolved
    assert refused.result is not None
    assert "assertion_not_plain" in {r.code for r in refused.result.integrity.reasons}


def test_a_gold_patch_that_does_not_apply_makes_the_task_invalid_in_one_line(
    task: RepoTask,
) -> None:
    broken = _diff(FIXED).replace(b"raise NotImplementedError", b"raise NotDone")
    with (
        pytest.raises(InvalidTask, match="the gold patch does not apply at the base") as got,
        Verifier(task, gold=broken) as verifier,
    ):
        verifier.prepare()
    assert "\n" not in str(got.value)
