"""Impossible canaries: no plain value ever passes one (no false positive by construction), and
an agreeable value at any depth of any container, or an agreeable container, always does.
Properties over generated values first (the child's half, no sandbox), then real runs of a
suite written as people write them (parametrize, a class, a loop) in both isolations."""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_scorewright.child.test_process import canaries, recheck
from pytest_scorewright.evaluator import Evaluator
from pytest_scorewright.protocol import values

LEAVES = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=8)
    | st.binary(max_size=4)
)
PLAIN = st.recursive(
    LEAVES,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=20,
)


class Yes:
    """Agrees with everything."""

    def __eq__(self, other: object) -> bool:
        return True

    def __hash__(self) -> int:
        return 0


class AgreeableDict(dict):  # type: ignore[type-arg]
    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = None


class SaysYes:
    def __contains__(self, item: object) -> bool:
        return True


def _canary(op: str, left: Any, right: Any) -> bool | None:
    canaries.new_test()
    sides = [recheck._side(value, op, None) for value in (left, right)]
    return canaries.canary(op, (left, right), sides)


def _leaf_paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if type(value) is dict:
        return [p for k, v in value.items() for p in _leaf_paths(v, (*path, k))]
    if type(value) in (list, tuple):
        return [p for i, v in enumerate(value) for p in _leaf_paths(v, (*path, i))]
    return [path]


def _with_liar(value: Any, path: tuple[Any, ...]) -> Any:
    if not path:
        return Yes()
    head, rest = path[0], path[1:]
    if type(value) is dict:
        return {**value, head: _with_liar(value[head], rest)}
    items = list(value)
    items[head] = _with_liar(items[head], rest)
    return type(value)(items)


@settings(max_examples=300, deadline=None)
@given(PLAIN)
def test_no_plain_value_passes_an_equality_canary(value: Any) -> None:
    assert _canary("==", value, value) is False
    # Rebuilt values travel as plain data too: equal, never agreeable.
    assert _canary("==", values.decode_plain(recheck._side(value, "==", None)["v"]), value) is False


@settings(max_examples=300, deadline=None)
@given(PLAIN, st.data())
def test_a_liar_at_any_depth_passes_an_equality_canary(value: Any, data: st.DataObject) -> None:
    paths = _leaf_paths(value)[: canaries.MAX_LEAVES] or [()]  # empty: the whole value
    path = data.draw(st.sampled_from(paths))
    lying = _with_liar(value, path)
    assert lying == value  # it passes the test's own assertion
    assert _canary("==", lying, value) is True
    assert _canary("==", value, lying) is True  # on either side


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.text(max_size=4), LEAVES, max_size=5))
def test_an_agreeable_container_passes_and_a_plain_one_does_not(value: dict[str, Any]) -> None:
    assert _canary("==", AgreeableDict(value), value) is True
    assert _canary("==", dict(value), value) is False


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(), min_size=1, max_size=6), st.data())
def test_membership_canaries_catch_containers_that_say_yes(
    members: list[int], data: st.DataObject
) -> None:
    element = data.draw(st.sampled_from(members))
    assert _canary("in", element, SaysYes()) is True
    # A real view: the canary asks for the element changed (canaries.changed: an int + 1),
    # which it holds only where the members hold that too (0 and -1: -1 + 1 is a member).
    holds_changed = canaries.changed(element) in members
    assert _canary("in", element, {m: 1 for m in members}.keys()) is holds_changed
    # A plain container may hold the changed member too: the reference's run decides
    # whether the place is a canary at all (integrity/relative.py).
    assert _canary("in", Yes(), members) is True


@pytest.mark.parametrize("op", ["<", "<=", ">", ">="])
def test_an_order_that_holds_both_ways_passes_the_reversed_canary(op: str) -> None:
    class Always:
        def __lt__(self, other: object) -> bool:
            return True

        __le__ = __gt__ = __ge__ = __lt__

    assert _canary(op, Always(), 3) is True
    assert _canary(op, 2, 3) is (op in (">", ">="))  # the plain pair: as builtins answer


def test_an_enum_with_its_own_equality_passes_and_a_plain_enum_does_not() -> None:
    class Plain(enum.Enum):
        A = 1
        B = 2

    assert _canary("==", Plain.A, 1) is False


def test_the_budget_bounds_the_work_of_one_test() -> None:
    canaries.new_test()
    big = list(range(500))
    sides = [recheck._side(v, "==", None) for v in (Yes(), big)]
    assert canaries.canary("==", (Yes(), big), sides) is True
    for _ in range(canaries.PER_TEST):
        canaries.canary("<", (1, 2), [{"v": 1}, {"v": 2}])
    assert canaries.canary("<", (1, 2), [{"v": 1}, {"v": 2}]) is None  # spent


# -- real runs ----------------------------------------------------------------------------------

REFERENCE = """
import enum


class Colour(enum.Enum):
    RED = 1
    GREEN = 2


def word_counts(text):
    counts = {}
    for word in text.split():
        counts[word] = counts.get(word, 0) + 1
    return counts


def stats(values):
    return {"n": len(values), "total": sum(values), "parts": [min(values), max(values)]}


def keys_of(mapping):
    return mapping.keys()


def colour_of(name):
    return Colour[name.upper()]


def pairs(n):
    return [(i, i * i) for i in range(n)]
"""

TESTS = """
import pytest
from solution import Colour, colour_of, keys_of, pairs, stats, word_counts


def test_counts():
    assert word_counts("a b a") == {"a": 2, "b": 1}


@pytest.mark.parametrize(("values", "n", "total"), [([1, 2, 3], 3, 6), ([5], 1, 5)])
def test_stats(values, n, total):
    assert stats(values) == {"n": n, "total": total, "parts": [min(values), max(values)]}


def test_keys():
    assert "x" in keys_of({"x": 1, "y": 2})


class TestColour:
    def test_red(self):
        assert colour_of("red") == Colour.RED


def test_pairs():
    for n in (3, 5):
        assert pairs(n) == [(i, i * i) for i in range(n)]
"""

HELDOUT = """
from solution import pairs, word_counts


def test_more_counts():
    assert word_counts("x x x") == {"x": 3}


def test_no_pairs():
    assert pairs(0) == []
"""

LIAR_IN_DICT = REFERENCE.replace(
    "def word_counts(text):",
    "class _Yes:\n    def __eq__(self, other):\n        return True\n\n"
    "    def __hash__(self):\n        return 0\n\n\n"
    "def word_counts(text):\n    return {w: _Yes() for w in set(text.split())}\n\n\n"
    "def _unused(text):",
).replace(
    '"parts": [min(values), max(values)]}',
    '"parts": [min(values), _Yes()]} if values else {}',
)

AGREEABLE_ENUM = REFERENCE.replace(
    "    GREEN = 2\n",
    "    GREEN = 2\n\n    def __eq__(self, other):\n        return True\n\n"
    "    __hash__ = enum.Enum.__hash__\n",
).replace("    return Colour[name.upper()]", "    return Colour.GREEN")

SAYS_YES_VIEW = REFERENCE.replace(
    "    return mapping.keys()",
    "    class Keys:\n        def __contains__(self, item):\n            return True\n\n"
    "    return Keys()",
)


@pytest.fixture(scope="module")
def task(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("nested")
    for name, text in (
        ("tests/test_nested.py", TESTS),
        ("heldout/test_more.py", HELDOUT),
        ("reference/solution.py", REFERENCE),
        ("candidates/right.py", REFERENCE),
        ("candidates/liar_in_dict.py", LIAR_IN_DICT),
        ("candidates/says_yes_view.py", SAYS_YES_VIEW),
        ("candidates/agreeable_enum.py", AGREEABLE_ENUM),
    ):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


@pytest.mark.sandbox
@pytest.mark.slow
@pytest.mark.parametrize("isolation", ["auto", "in-process"])
def test_liars_inside_containers_and_views_are_rejected_and_right_code_is_clean(
    task: Path, isolation: str
) -> None:
    with Evaluator(
        task / "tests", heldout=task / "heldout", reference=task / "reference", isolation=isolation
    ) as evaluator:
        right = evaluator.score(task / "candidates" / "right.py")
        liar = evaluator.score(task / "candidates" / "liar_in_dict.py")
        view = evaluator.score(task / "candidates" / "says_yes_view.py")
        agreeable_enum = evaluator.score(task / "candidates" / "agreeable_enum.py")
    assert right.signal("pass_rate") == 1.0
    assert not right.integrity.reasons, right.integrity.reasons
    for result in (liar, view):
        assert result.integrity.rejected, result.integrity.reasons
        assert result.signal("pass_rate") == 0.0
    codes = {r.code for r in view.integrity.reasons}
    assert "canary_passed" in codes
    (canary,) = [r for r in view.integrity.reasons if r.code == "canary_passed"]
    assert "test_keys" in canary.detail
    if isolation == "in-process":
        assert "canary_passed" in {r.code for r in liar.integrity.reasons}
        # In process the member's own __eq__ runs; the parent re-checks two members by class
        # and value, which the wrong one fails.
        assert agreeable_enum.integrity.rejected, agreeable_enum.integrity.reasons
        assert "assertion_recheck_failed" in {r.code for r in agreeable_enum.integrity.reasons}
    else:
        # Apart, two members compare in the test process by class and value: the class's
        # __eq__ never decides, so the wrong answer simply fails, as an honest bug would.
        assert not agreeable_enum.integrity.rejected, agreeable_enum.integrity.reasons
        failed = {t.nodeid.rsplit("::", 1)[-1] for t in agreeable_enum.tests if not t.passed}
        assert failed == {"test_red"}, failed
