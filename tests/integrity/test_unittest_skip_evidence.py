"""A skip raised from candidate code inside a ``unittest.TestCase`` test is gaming evidence,
as it is in a plain pytest test: pytest's unittest support hands the exception to the item as
a result (``pytest.skip``) or makes a fresh Skipped of the SkipTest unittest caught, and the
reporter still finds the candidate's frame (child/test_process/reporter.py,
child/shared/monitor.py)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from pytest_scorewright.evaluator import Evaluator

pytestmark = pytest.mark.sandbox

SUITE = """
    import unittest
    from solution import add

    class AddTest(unittest.TestCase):
        def test_small(self):
            self.assertEqual(add(2, 3), 5)

        def test_large(self):
            self.assertEqual(add(10**6, 1), 10**6 + 1)
"""
REFERENCE = "def add(a, b):\n    return a + b\n"
SKIPPERS = {
    "pytest_skip": "import pytest\n\ndef add(a, b):\n    pytest.skip('not today')\n",
    "unittest_skiptest": (
        "import unittest\n\ndef add(a, b):\n    raise unittest.SkipTest('not today')\n"
    ),
}


@pytest.mark.parametrize("kind", sorted(SKIPPERS))
def test_a_skip_from_candidate_code_in_a_unittest_testcase_is_gaming_evidence(
    kind: str, tmp_path: Path
) -> None:
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_add.py").write_text(textwrap.dedent(SUITE))
    (tmp_path / "reference.py").write_text(REFERENCE)
    candidate = tmp_path / "solution.py"
    candidate.write_text(SKIPPERS[kind])
    with Evaluator(
        tests, reference=tmp_path / "reference.py", isolation="in-process", module="solution"
    ) as ev:
        result = ev.score(candidate)
        honest = ev.score(tmp_path / "reference.py")
    outcomes = {t.nodeid.rsplit("::", 1)[-1]: t.outcome for t in result.tests}
    assert outcomes == {"test_small": "skipped", "test_large": "skipped"}
    skips = [r for r in result.integrity.reasons if r.code == "skip_from_candidate"]
    assert skips, [r.code for r in result.integrity.reasons]
    assert "solution.py:4" in skips[0].detail
    assert result.integrity.rejected
    assert not [r for r in honest.integrity.reasons if r.code == "skip_from_candidate"]
