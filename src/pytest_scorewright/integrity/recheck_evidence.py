"""Re-checked assertions, the parent's half: a passing assertion's operands, decoded into
builtin values here, must still satisfy it.

The trusted test bytecode (suite/rewritten.py, child/test_process/recheck.py) sends, for each
passing
``assert a == b`` (``!=``, ``in``, ``not in``, ``<``, ``<=``, ``>``, ``>=``, ``is None``,
``is not None``, ``not x``, a bare truth test, and unittest's ``assertEqual`` family), a
plain encoding of each operand made of exact
builtin types only. The parent rebuilds the values and evaluates the comparison with
builtin semantics: a forged ``__eq__`` has nothing to run on here. Operands that were not
plain data travel as their type's name; too large or unencodable ones are skipped.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pytest_scorewright.protocol import values

#: The comparisons re-checked, and how the parent evaluates each on decoded values.
OPS: Mapping[str, Callable[[list[Any]], bool]] = {
    "==": lambda s: bool(s[0] == s[1]),
    "!=": lambda s: bool(s[0] != s[1]),
    "in": lambda s: bool(s[0] in s[1]),
    "not in": lambda s: bool(s[0] not in s[1]),
    "is None": lambda s: s[0] is None,
    "is not None": lambda s: s[0] is not None,
    "truth": lambda s: bool(s[0]),
    "not": lambda s: not s[0],
    "<": lambda s: bool(s[0] < s[1]),
    "<=": lambda s: bool(s[0] <= s[1]),
    ">": lambda s: bool(s[0] > s[1]),
    ">=": lambda s: bool(s[0] >= s[1]),
    # Not an assertion: a call's result in the trusted tests, told only as plain data or the
    # candidate's own object (child/test_process/recheck.py ``returned``); held against the
    # reference's.
    "returned": lambda s: True,
    # Not an assertion either: an object of the candidate's (apart) handed a test's value at
    # a place (child/test_process/recheck.py ``given``); held against the reference's objects there.
    "given": lambda s: True,
}
#: How many operands each comparison has.
ARITY: Mapping[str, int] = {
    op: 1 if op in ("is None", "is not None", "truth", "not", "returned", "given") else 2
    for op in OPS
}
#: The operand index under which a call's result is kept (its place has no operands).
RETURNED = -1
#: The operand index under which an object handed a value is kept.
GIVEN = -2


class Undecodable(Exception):
    """Not an encoding the child sends."""


@dataclass(frozen=True)
class Side:
    """One operand as received: a decoded value, or why there is none."""

    plain: bool
    value: Any = None
    #: The operand's type when it was not plain data (``module.Qualname``).
    type_name: str = ""
    #: Its class comes from candidate code and defines the comparison itself.
    own: bool = False
    skipped: bool = False


def read_side(raw: Any) -> Side:
    if not isinstance(raw, dict):
        raise Undecodable("a side is not an object")
    if "v" in raw:
        return Side(True, decode(raw["v"]))
    if "np" in raw:
        name, own = raw["np"], raw.get("own", False)
        if not isinstance(name, str) or not isinstance(own, bool):
            raise Undecodable("a mistyped non-plain side")
        return Side(False, type_name=name[:120], own=own)
    if "skip" in raw:
        return Side(False, skipped=True)
    raise Undecodable("a side with no value")


def decode(tagged: Any) -> Any:
    """The child's tagged JSON of exact builtin values (protocol/values.py) back to values."""
    try:
        return values.decode_plain(tagged)
    except (values.NotPlainData, RecursionError) as exc:
        raise Undecodable(str(exc)[:80]) from None


def has_nan(value: Any, depth: int = 0) -> bool:
    """NaN compares unequal to itself, but containers compare identical members as equal:
    the child's ``[x] == [x]`` holds where the decoded copies would not. Such values are not
    re-checked."""
    if depth > 60:
        return True
    if isinstance(value, float):
        return math.isnan(value)
    if isinstance(value, dict):
        return any(has_nan(k, depth + 1) or has_nan(v, depth + 1) for k, v in value.items())
    if isinstance(value, (list, tuple, set, frozenset)):
        return any(has_nan(v, depth + 1) for v in value)
    return False


def holds(op: str, sides: list[Side]) -> bool | None:
    """Whether the comparison holds on the decoded operands; None when it cannot be
    re-checked (a side not plain or skipped, NaN, or a comparison builtins refuse)."""
    if not all(s.plain for s in sides) or any(has_nan(s.value) for s in sides):
        return None
    try:
        return OPS[op]([s.value for s in sides])
    except TypeError:  # e.g. `x in 5`: it raised in the child too, so it never passed there
        return None
