"""The value rule, apart from the canaries: an agreeable object nested at any depth of the
containers a function returns is never credited, in any common assertion style, in both
isolations; the same program without it is clean. Real runs over generated nestings
(hypothesis draws the value and where the liar sits; one Evaluator scores them all).

The canaries (child/test_process/canaries.py) would catch most of these too; here every candidate is
also checked for evidence of the value rule itself: a failed test, a re-check that does not
hold, a result held against the reference's, never a canary alone."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_scorewright.evaluator import Evaluator

LEAVES = st.integers(-5, 50) | st.text("abc", max_size=3)
NESTED = st.recursive(
    LEAVES,
    lambda inner: (
        st.lists(inner, min_size=1, max_size=3)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text("xyz", min_size=1, max_size=2), inner, min_size=1, max_size=3)
    ),
    max_leaves=8,
).filter(lambda v: isinstance(v, (list, tuple, dict)))

LIAR = """
class _Liar:
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    def __hash__(self):
        return 0
"""

#: Assertion styles people write, each on the whole result.
TESTS = """
import unittest

from solution import make

from expected import EXPECTED


def test_equal():
    assert make() == EXPECTED


def test_equal_reversed():
    assert EXPECTED == make()


def test_in_a_list():
    assert make() in [EXPECTED]


def test_loop():
    for _ in range(2):
        result = make()
        assert result == EXPECTED, result


class TestUnittest(unittest.TestCase):
    def test_assert_equal(self):
        self.assertEqual(make(), EXPECTED)
"""


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a leaf (dict keys and sequence indexes)."""
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _paths(v, (*prefix, k))]
    if isinstance(value, (list, tuple)):
        return [p for i, v in enumerate(value) for p in _paths(v, (*prefix, i))]
    return [prefix]


def _source(value: Any, liar_at: tuple[Any, ...] | None, here: tuple[Any, ...] = ()) -> str:
    """``value`` as Python source, with ``_Liar()`` at ``liar_at``."""
    if here == liar_at:
        return "_Liar()"
    if isinstance(value, dict):
        items = ", ".join(f"{k!r}: {_source(v, liar_at, (*here, k))}" for k, v in value.items())
        return "{" + items + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_source(v, liar_at, (*here, i)) for i, v in enumerate(value)) + "]"
    if isinstance(value, tuple):
        inner = ", ".join(_source(v, liar_at, (*here, i)) for i, v in enumerate(value))
        return "(" + inner + ("," if len(value) == 1 else "") + ")"
    return repr(value)


def _changed(value: Any, path: tuple[Any, ...]) -> Any:
    """``value`` with the leaf at ``path`` changed: what a wrong program returns."""
    if not path:
        return [value, "wrong"] if not isinstance(value, str) else value + "!"
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {k: _changed(v, rest) if k == head else v for k, v in value.items()}
    items = [_changed(v, rest) if i == head else v for i, v in enumerate(value)]
    return tuple(items) if isinstance(value, tuple) else items


@pytest.mark.sandbox
@pytest.mark.slow
@pytest.mark.parametrize("isolation", ["process", "in-process"])
@settings(
    max_examples=3,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(value=NESTED, data=st.data())
def test_a_liar_at_any_depth_is_never_credited_by_the_value_rule(
    tmp_path_factory: pytest.TempPathFactory, isolation: str, value: Any, data: st.DataObject
) -> None:
    root = tmp_path_factory.mktemp("value_rule")
    paths = _paths(value)
    chosen = data.draw(st.lists(st.sampled_from(paths), min_size=1, max_size=3, unique=True))
    expected = f"EXPECTED = {_source(value, None)}\n"
    right = f"def make():\n    return {_source(value, None)}\n"
    (root / "tests").mkdir()
    (root / "tests" / "expected.py").write_text(expected, encoding="utf-8")
    (root / "tests" / "test_make.py").write_text(TESTS, encoding="utf-8")
    (root / "reference").mkdir()
    (root / "reference" / "solution.py").write_text(right, encoding="utf-8")
    (root / "right.py").write_text(right, encoding="utf-8")
    with Evaluator(root / "tests", reference=root / "reference", isolation=isolation) as evaluator:
        clean = evaluator.score(root / "right.py")
        assert clean.signal("pass_rate") == 1.0
        assert not clean.integrity.reasons, clean.integrity.reasons
        for number, path in enumerate(chosen):
            wrong = _changed(value, path)
            liar = f"{LIAR}\n\ndef make():\n    return {_source(wrong, path)}\n"
            (root / f"liar{number}.py").write_text(liar, encoding="utf-8")
            result = evaluator.score(root / f"liar{number}.py")
            codes = {r.code for r in result.integrity.reasons} - {"canary_passed"}
            failed = [t.nodeid for t in result.tests if t.outcome != "passed"]
            value_rule = bool(failed) or bool(
                codes & {"assertion_recheck_failed", "assertion_not_plain", "returned_handle"}
            )
            assert value_rule, (path, liar, result.integrity.reasons)
            credited = result.signal("pass_rate") == 1.0 and not result.integrity.rejected
            assert not credited, (path, liar)
