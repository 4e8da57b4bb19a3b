"""Impossible canaries, the child's half: after a trusted test's assertion passed, the same
comparison is made again with an outcome no correct program can give, on the very operands
the test held. Runs in the test process, called by child/test_process/recheck.py ``check``.

- ``a == b``: an operand that is not plain data is compared with a fresh object that equals
  nothing (an enum member or an agreeable object with no plain side to change); each operand
  that is plain data is replaced by a copy that no value equal to it equals (a number moved, a
  string lengthened, ``None`` swapped for a fresh object), first as a whole, then one leaf at a
  time (a liar hidden at any depth of a dict or a list is compared with the changed leaf while
  every other leaf still matches);
- two stand-ins compared (``a == b``, both the candidate's objects, apart): ``a`` against
  ``b``'s class, a different object of the candidate's;
- ``a in b``: the element changed, or every member of a plain container changed;
- ``<``, ``<=``, ``>``, ``>=``: the reverse comparison (``a < b`` and ``a >= b`` together).

If the variant holds too, something other than builtin semantics decided the comparison:
candidate code (an agreeable object, a liar inside a container, a view or an enum that says
yes). The answer travels in the re-check message; the parent counts it only where the
reference's run at the same test and site failed the same canary (integrity/relative.py), so
a suite whose own values are agreeable on purpose is never held against anyone.

Plain operands (exact builtins, as child/test_process/recheck.py encodes them) are rebuilt from
their
encoding, so the variants are fresh builtin values: no candidate object is ever copied.
When both operands of ``==`` are plain the canary fails by construction and nothing is
evaluated.
"""

from __future__ import annotations

import operator
import sys
from collections.abc import Callable, Iterator
from typing import Any

from pytest_scorewright.protocol import values

#: Comparisons a canary is made for.
OPS = frozenset({"==", "in", "<", "<=", ">", ">="})
#: Leaves of one plain operand tried one at a time (after the whole variant).
MAX_LEAVES = 48
#: Variant comparisons per test: a budget, so a suite of large values stays cheap.
PER_TEST = 300
_REVERSED: dict[str, Callable[[Any, Any], Any]] = {
    "<": operator.ge,
    "<=": operator.gt,
    ">": operator.le,
    ">=": operator.lt,
}
_CONTAINERS = (list, tuple, dict, set, frozenset)


class _Changed:
    """A value equal to nothing but itself: what ``None`` and the like become."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<canary>"


class _Budget:
    left = PER_TEST


_budget = _Budget()


def new_test() -> None:
    _budget.left = PER_TEST


def canary(op: str, operands: tuple[Any, ...], sides: list[dict[str, Any]]) -> bool | None:
    """Whether the impossible variant of the passing assertion ``op`` also held: True means
    candidate code decided it; None when no variant could be made (no plain operand, an
    operand too large, no budget left). ``sides``: child/test_process/recheck.py's encodings."""
    if op not in OPS or len(operands) != 2 or len(sides) != 2:
        return None
    if any("skip" in side for side in sides):
        return None
    plain = ["v" in side for side in sides]
    if op in _REVERSED:
        return _holds(lambda: _REVERSED[op](operands[0], operands[1])) if _spend() else None
    if op == "==":
        if all(plain):
            return False  # builtin values equal to b are unequal to every variant of b
        return _equal_canary(operands, sides, plain)
    return _member_canary(operands, sides, plain)


def _equal_canary(
    operands: tuple[Any, ...], sides: list[dict[str, Any]], plain: list[bool]
) -> bool | None:
    made = False
    for index in (0, 1):  # an operand that is not plain data, against a fresh object
        if plain[index] or _is_stand_in(operands[index]) or not _spend():
            continue
        made = True
        operand = operands[index]
        if _holds(lambda operand=operand: operand == _Changed()):  # type: ignore[misc]
            return True
    if all(_is_stand_in(o) for o in operands) and _spend():
        # Two stand-ins (an enum member against the test's own, with the candidate apart):
        # the left one against the right one's class, a different object of the candidate's.
        kind = _remote_class(operands[1])
        if kind is not None:
            made = True
            if _holds(lambda: operands[0] == kind):
                return True
    for index in (1, 0):  # the expected value is usually on the right
        if not plain[index]:
            continue
        copy = values.decode_plain(sides[index]["v"])
        other = operands[1 - index]
        for variant in variants(copy):
            if not _spend():
                return None if not made else False
            made = True
            pair = (other, variant) if index == 1 else (variant, other)
            if _holds(lambda pair=pair: pair[0] == pair[1]):  # type: ignore[misc]
                return True
    return False if made else None


def _member_canary(
    operands: tuple[Any, ...], sides: list[dict[str, Any]], plain: list[bool]
) -> bool | None:
    element, container = operands
    if plain[1]:
        copy = values.decode_plain(sides[1]["v"])
        if not isinstance(copy, _CONTAINERS):
            return None  # a substring test: no member to change
        moved = _each_member_changed(copy)
        return _holds(lambda: element in moved) if _spend() else None
    if plain[0]:
        changed_element = whole(values.decode_plain(sides[0]["v"]))
        return _holds(lambda: changed_element in container) if _spend() else None
    return None


def _is_stand_in(value: Any) -> bool:
    """A stand-in for the candidate's object (child/test_process/proxy.py) compares with plain
    values
    itself (never the candidate's to decide), so a fresh object tells nothing about it."""
    proxy = sys.modules.get("pytest_scorewright.child.test_process.proxy")
    stand_in = getattr(proxy, "StandIn", None) if proxy is not None else None
    return stand_in is not None and isinstance(value, stand_in)


def _remote_class(stand_in: Any) -> Any:
    """The class of the candidate's object behind ``stand_in``, as a stand-in, or None."""
    try:
        found = stand_in._sw_ask("getattr", name="__class__")
        holder = getattr(type(found), "_sw_holder", None) if isinstance(found, type) else None
        if holder is not None:
            found = holder(found)  # a stand-in class: its object, which compares there
    except Exception:
        return None
    return found if _is_stand_in(found) else None


def _spend() -> bool:
    if _budget.left <= 0:
        return False
    _budget.left -= 1
    return True


def _holds(comparison: Callable[[], Any]) -> bool:
    try:
        return bool(comparison())
    except Exception:
        return False


def variants(value: Any) -> Iterator[Any]:
    """``value`` changed as a whole, then one leaf at a time (at most MAX_LEAVES)."""
    yield whole(value)
    if not isinstance(value, _CONTAINERS):
        return
    for count, path in enumerate(_leaf_paths(value, ())):
        if count >= MAX_LEAVES:
            return
        yield _replaced(value, path)


def changed(leaf: Any) -> Any:
    """A builtin leaf moved to a value unequal to it under builtin semantics."""
    kind = type(leaf)
    if kind is bool:
        return not leaf
    if kind is int or kind is complex:
        return leaf + 1
    if kind is float:
        if leaf != leaf:  # NaN: never equal to anything already
            return _Changed()
        return 0.5 if leaf in (float("inf"), float("-inf")) else leaf + 1.0 + abs(leaf)
    if kind is str:
        return leaf + "\x00#"
    if kind is bytes:
        return leaf + b"\x00#"
    if kind is bytearray:
        return bytearray(leaf) + b"\x00#"
    return _Changed()


def whole(value: Any) -> Any:
    """Every leaf of ``value`` changed (dict keys kept); an empty container gains a member."""
    kind = type(value)
    if kind is list or kind is tuple:
        items = [whole(v) for v in value] or [_Changed()]
        return kind(items)
    if kind is dict:
        return {k: whole(v) for k, v in value.items()} or {_Changed(): _Changed()}
    if kind is set or kind is frozenset:
        return kind(value | {_Changed()})
    return changed(value)


def _each_member_changed(container: Any) -> Any:
    if isinstance(container, (dict, set, frozenset)):
        members = [changed(m) for m in container]
        kind = set if isinstance(container, dict) else type(container)
        return kind(m if _hashable(m) else _Changed() for m in members)
    return type(container)(whole(m) for m in container)


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _leaf_paths(value: Any, path: tuple[Any, ...]) -> Iterator[tuple[Any, ...]]:
    if type(value) is dict:
        for key, inner in value.items():
            yield from _leaf_paths(inner, (*path, key))
    elif type(value) is list or type(value) is tuple:
        for index, inner in enumerate(value):
            yield from _leaf_paths(inner, (*path, index))
    else:
        yield path


def _replaced(value: Any, path: tuple[Any, ...]) -> Any:
    if not path:
        return whole(value)
    head, rest = path[0], path[1:]
    if type(value) is dict:
        copy = dict(value)
        copy[head] = _replaced(value[head], rest)
        return copy
    items = list(value)
    items[head] = _replaced(items[head], rest)
    return type(value)(items)
