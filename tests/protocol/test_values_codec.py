"""The codec's fast paths for lists of simple items say what the item-by-item rule says:
the same JSON out, the same values back, over generated lists (big ints, NaN, infinities,
bools and None mixed in)."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from pytest_scorewright.protocol import values

_ITEMS = st.one_of(
    st.integers(),
    st.integers(min_value=-(1 << 70), max_value=1 << 70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.text(max_size=4),
)


def _no_reference(obj: Any) -> Any:
    raise AssertionError(f"a simple item crossed as a reference: {obj!r}")


def _slow_encode(items: list[Any]) -> list[Any]:
    """The item-by-item rule: each item as :func:`values.encode` encodes it alone."""
    return [values.encode(item, _no_reference, 1) for item in items]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return type(a) is type(b) and a == b


@given(st.lists(_ITEMS, max_size=40) | st.lists(st.integers(), max_size=40))
def test_a_list_of_simple_items_encodes_as_item_by_item(items: list[Any]) -> None:
    assert values.encode(items, _no_reference) == _slow_encode(items)
    back = values.decode(values.encode(items, _no_reference), _no_reference)
    assert type(back) is list
    assert len(back) == len(items)
    assert all(_same(x, y) for x, y in zip(items, back, strict=True))


@given(st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=40))
def test_only_finite_floats_cross_untagged(items: list[float]) -> None:
    encoded = values.encode(items, _no_reference)
    assert all(
        type(e) is float if math.isfinite(x) else e == {"f": repr(x)}
        for x, e in zip(items, encoded, strict=True)
    )


def test_the_edges_of_the_untagged_int_range() -> None:
    big = 1 << 62
    assert values.encode([big - 1, -big + 1], _no_reference) == [big - 1, -big + 1]
    assert values.encode([big], _no_reference) == [{"ix": format(big, "x")}]
    assert values.encode([-big, 1], _no_reference) == [{"ix": format(-big, "x")}, 1]
    assert values.encode([True, 2], _no_reference) == [True, 2]
    assert values.encode([], _no_reference) == []
