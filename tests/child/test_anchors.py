"""Anchored checks: values compared in the parent against the reference's, never in the child."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from pytest_scorewright.child.test_process.anchors import NotPlain, encode, make_anchor
from pytest_scorewright.evaluator import Evaluator
from pytest_scorewright.integrity.anchor_evidence import matches
from pytest_scorewright.result import ScoreResult

TESTS = """
from solution import mean, sort_desc


def test_sort(scorewright):
    scorewright.expect(sort_desc([3, 1, 2]))


def test_mean(scorewright):
    scorewright.expect(mean([1, 2, 4]), rel=1e-9)


def test_two_values(scorewright):
    scorewright.expect(sort_desc([]))
    scorewright.expect(sort_desc(["b", "a"]))
"""

REFERENCE = """
def sort_desc(items):
    return sorted(items, reverse=True)


def mean(values):
    return sum(values) / len(values)
"""


@pytest.fixture(scope="module", params=["auto", "in-process"])
def evaluator(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Evaluator:
    root = tmp_path_factory.mktemp("anchored")
    (root / "tests").mkdir()
    (root / "tests" / "test_anchored.py").write_text(TESTS)
    (root / "ref.py").write_text(REFERENCE)
    return Evaluator(root / "tests", reference=root / "ref.py", isolation=request.param)


def _score(evaluator: Evaluator, tmp_path: Path, source: str) -> ScoreResult:
    path = tmp_path / "candidate.py"
    path.write_text(textwrap.dedent(source))
    return evaluator.score(path)


def _outcomes(result: ScoreResult) -> dict[str, tuple[str, str | None]]:
    return {t.nodeid.split("::")[-1]: (t.outcome, t.message) for t in result.tests}


@pytest.mark.sandbox
def test_the_reference_passes_its_anchored_tests(evaluator: Evaluator, tmp_path: Path) -> None:
    result = _score(evaluator, tmp_path, REFERENCE)
    assert result.signal("pass_rate") == 1.0
    assert not result.integrity.flagged


@pytest.mark.sandbox
def test_a_wrong_value_fails_although_the_child_reported_a_pass(
    evaluator: Evaluator, tmp_path: Path
) -> None:
    result = _score(
        evaluator,
        tmp_path,
        """
        def sort_desc(items):
            return sorted(items)

        def mean(values):
            return sum(values) / len(values)
        """,
    )
    outcomes = _outcomes(result)
    assert outcomes["test_sort"] == (
        "failed",
        "anchored check: value #1 differs from the reference",
    )
    assert outcomes["test_two_values"][0] == "failed"
    assert outcomes["test_mean"][0] == "passed"


@pytest.mark.sandbox
def test_float_tolerance_comes_from_the_reference(evaluator: Evaluator, tmp_path: Path) -> None:
    result = _score(
        evaluator,
        tmp_path,
        """
        def sort_desc(items):
            return sorted(items, reverse=True)

        def mean(values):
            return sum(v / len(values) for v in values) * (1 + 1e-12)
        """,
    )
    assert _outcomes(result)["test_mean"][0] == "passed"


@pytest.mark.sandbox
def test_an_always_equal_object_is_a_finding_and_a_failure(
    evaluator: Evaluator, tmp_path: Path
) -> None:
    result = _score(
        evaluator,
        tmp_path,
        """
        class Anything:  # not a builtin subclass: apart, that would cross as its plain value
            def __eq__(self, other):
                return True

        def sort_desc(items):
            return Anything()

        def mean(values):
            return Anything()
        """,
    )
    assert set(o for o, _ in _outcomes(result).values()) == {"failed"}
    assert "anchor_not_plain" in {r.code for r in result.integrity.reasons}


@pytest.mark.sandbox
def test_a_tuple_is_not_a_list(evaluator: Evaluator, tmp_path: Path) -> None:
    result = _score(
        evaluator,
        tmp_path,
        """
        def sort_desc(items):
            return tuple(sorted(items, reverse=True))

        def mean(values):
            return sum(values) / len(values)
        """,
    )
    assert _outcomes(result)["test_sort"][0] == "failed"


@pytest.mark.sandbox
def test_silencing_the_anchor_fails_the_test(evaluator: Evaluator, tmp_path: Path) -> None:
    result = _score(
        evaluator,
        tmp_path,
        """
        from pytest_scorewright.child.test_process import anchors
        anchors.Scorewright.expect = lambda self, value, **kw: None

        def sort_desc(items):
            return []

        def mean(values):
            return 0.0
        """,
    )
    outcomes = _outcomes(result)
    assert result.signal("tests_passed") == 0
    if evaluator.isolated:
        # Its patch stays in its own process: the test's anchor still goes out, and differs.
        assert outcomes["test_sort"] == (
            "failed",
            "anchored check: value #1 differs from the reference",
        )
        return
    assert outcomes["test_sort"] == ("failed", "anchored check: expected 1 value(s), got 0")
    assert result.integrity.flagged


def test_in_plugin_mode_the_fixture_records_nothing(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_a(scorewright):\n    scorewright.expect([1, 2])\n")
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)


@pytest.mark.parametrize(
    "value",
    [[1, "a", None, True, 2.5], (1, 2), {"k": [1]}, {1, 2}, b"x", 10**30, float("nan")],
)
def test_plain_values_encode(value: object) -> None:
    encode(value)
    assert matches(make_anchor(value, None, None), make_anchor(value, None, None)) is (
        value == value  # NaN differs from itself in Python; its repr matches here
    ) or isinstance(value, float)


def test_subclasses_are_not_plain() -> None:
    class Sneaky(int):
        pass

    with pytest.raises(NotPlain, match="Sneaky"):
        encode([1, Sneaky(2)])
    assert make_anchor(Sneaky(2), None, None).not_plain is not None
