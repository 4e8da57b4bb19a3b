"""Values as plain data: the one tagged-JSON encoding of this project. Calls between the test
process and the candidate's process use :func:`encode`/:func:`decode` (references for what is
not plain data); anchored values, submissions and re-checked assertion operands use
:func:`plain`/:func:`decode_plain` (exact builtin values only, within a budget), and anchors
compare by the digest of :func:`canonical`.

A value crosses as tagged JSON and is rebuilt on the other side as a fresh object of a type
the receiver trusts: builtins (exact types only, never a subclass) and a few standard-library
value types. Anything else crosses as a *reference*: the receiver gets a proxy through which it
can only ask the owner to act (call, get an attribute, compare with another reference...).
So nothing the candidate returns can carry behaviour into the test process: no ``__eq__`` of
its own, no lazy object, no ``unittest.mock.ANY``.

Tags (a JSON object is always a tag, never a dict)::

    {"t": [...]} tuple       {"d": [[k, v]...]} dict  {"s": [...]} set   {"fs": [...]} frozenset
    {"b": base64} bytes      {"ba": base64} bytearray {"c": [re, im]} complex
    {"f": "nan"} float       {"ix": "-1f"} big int    {"dec": "1.5"} Decimal
    {"fr": [n, d]} Fraction  {"dt"|"da"|"tm": iso} datetime, date, time
    {"td": [d, s, us]} timedelta    {"od"|"ctr": [[k, v]...]} OrderedDict, Counter
    {"dd": [factory, [[k, v]...]]} defaultdict        {"dq": [[...], maxlen]} deque
    {"nt": [name, [fields], [values]]} a namedtuple   {"rg": [start, stop, step]} range
    {"p": "path"} pathlib.Path     {"sl": [start, stop, step]} slice (of plain values)
    {"dk": [...]} {"dvs": [...]} {"di": [[k, v]...]} a dict's keys, values, items view
    {"ref": ...} a reference (its form is the codec's caller's business)

The decoder is strict: bounded depth, known tags only, types checked; anything else raises
:class:`NotPlainData`, never anything else.
"""

from __future__ import annotations

import base64
import collections
import datetime
import decimal
import fractions
import json
import math
import pathlib
from collections.abc import Callable, Iterator
from typing import Any

#: Deepest nesting either side encodes or accepts.
MAX_DEPTH = 200
_BIG = 1 << 62
#: defaultdict factories that cross by name (anything else crosses as a plain dict).
_FACTORIES: dict[str, Callable[[], Any]] = {
    "list": list,
    "dict": dict,
    "set": set,
    "int": int,
    "float": float,
    "str": str,
    "tuple": tuple,
}
_namedtuples: dict[tuple[str, tuple[str, ...]], type] = {}
#: Types that are their own JSON form (within limits checked by _all_plain).
_SIMPLE = frozenset({str, int, float, bool, type(None)})


class NotPlainData(ValueError):
    """A message that is not well-formed plain data."""


def encode(value: Any, ref: Callable[[Any], Any], depth: int = 0, *, by_value: bool = False) -> Any:
    """``value`` as tagged JSON; ``ref(obj)`` gives the reference form of anything else.

    ``by_value`` (what the candidate's process sends): an instance of a subclass of a builtin
    type crosses as a fresh value of its builtin base, taken by the base type's own code, so
    its methods stay behind: ``startswith``, ``in``, arithmetic and ``len`` on it then run in
    the test process, on plain data (docs/isolation.md)."""
    if depth > MAX_DEPTH:
        raise NotPlainData(f"nested deeper than {MAX_DEPTH}")
    kind = type(value)
    if value is None or kind is bool or kind is str:
        return value
    if kind is int:
        return value if -_BIG < value < _BIG else {"ix": format(value, "x")}
    if kind is float:
        return value if math.isfinite(value) else {"f": repr(value)}
    d = depth + 1

    def e(item: Any) -> Any:
        return encode(item, ref, d, by_value=by_value)

    if kind is list:
        if _simple_list(value):
            return list(value)  # the common case, without a call per item
        return [e(v) for v in value]
    if kind is tuple:
        return {"t": [e(v) for v in value]}
    if kind is dict:
        return {"d": [[e(k), e(v)] for k, v in value.items()]}
    if kind is set or kind is frozenset:
        return {"s" if kind is set else "fs": [e(v) for v in value]}
    if kind is bytes or kind is bytearray:
        return {"b" if kind is bytes else "ba": base64.b64encode(value).decode("ascii")}
    if kind is complex:
        return {"c": [e(value.real), e(value.imag)]}
    special = _encode_library(value, kind, e)
    if special is not None:
        return special
    if by_value:
        plain = _plain_of(value, kind)
        if plain is not _NONE:
            return encode(plain, ref, depth, by_value=True)
    return {"ref": ref(value)}


_NONE = object()
_EMPTY: dict[Any, Any] = {}
_KEYS_VIEW, _VALUES_VIEW, _ITEMS_VIEW = (
    type(_EMPTY.keys()),
    type(_EMPTY.values()),
    type(_EMPTY.items()),
)


def _plain_of(value: Any, kind: type) -> Any:
    """The builtin value of a builtin subclass or a numpy scalar (``np.int64``: numpy's own
    ``generic.item``), taken by the base type's own code; :data:`_NONE` for anything else."""
    base = _builtin_base(kind)
    if base is not None:
        return _AS_BASE[base](value)
    mro: tuple[type, ...] = type.__dict__["__mro__"].__get__(kind)
    for cls in mro:
        if cls.__name__ == "generic" and cls.__module__ == "numpy":
            return cls.item(value)  # type: ignore[attr-defined]
    return _NONE


#: Builtin types whose subclasses cross by value, and how each takes the base's value with
#: the base type's own code (a subclass's ``__iter__``, ``__str__`` or ``keys`` is not called:
#: ``dict.copy`` of a subclass that overrides ``keys`` may still consult it, in the
#: candidate's own process, which only changes what the candidate says the content is).
_AS_BASE: dict[type, Callable[[Any], Any]] = {
    str: str.__str__,
    int: int.__int__,
    float: float.__float__,
    bytes: lambda value: bytes(memoryview(value)),
    bytearray: lambda value: bytearray(memoryview(value)),
    list: list.copy,
    tuple: lambda value: tuple.__getitem__(value, slice(None)),
    dict: dict.copy,
    set: set.copy,
    frozenset: frozenset.copy,
}


def _builtin_base(kind: type) -> type | None:
    """The builtin base of a subclass of one of :data:`_AS_BASE`'s types, or None."""
    # type's own __mro__ descriptor: a metaclass cannot answer for the class.
    mro: tuple[type, ...] = type.__dict__["__mro__"].__get__(kind)
    for cls in mro[1:]:
        if cls in _AS_BASE:
            return cls
    return None


def _simple_list(items: list[Any]) -> bool:
    """Whether every item of ``items`` is simple and its own JSON form; the lists of one
    type that most calls pass and return are checked by C loops (a timed call's crossing
    is subtracted only down to a null call's, so its cost here reads as the candidate's)."""
    kinds = set(map(type, items))
    if not kinds <= _SIMPLE:
        return False
    if kinds == _INTS:
        return bool(min(items) > -_BIG and max(items) < _BIG)
    if kinds == _FLOATS:
        return all(map(math.isfinite, items))
    return kinds <= _TEXT or _all_plain(items)


_INTS, _FLOATS = frozenset({int}), frozenset({float})
_TEXT = frozenset({str, bool, type(None)})


def _all_plain(values: list[Any]) -> bool:
    """Whether every (simple) item is its own JSON form: ints in range, finite floats."""
    return all(
        -_BIG < v < _BIG if type(v) is int else math.isfinite(v) if type(v) is float else True
        for v in values
    )


def _encode_library(value: Any, kind: type, e: Callable[[Any], Any]) -> Any:
    if kind is decimal.Decimal:
        return {"dec": str(value)}
    if kind is fractions.Fraction:
        return {"fr": [e(value.numerator), e(value.denominator)]}
    if kind is datetime.datetime:
        return {"dt": value.isoformat()} if value.tzinfo is None else None
    if kind is datetime.date:
        return {"da": value.isoformat()}
    if kind is datetime.time:
        return {"tm": value.isoformat()} if value.tzinfo is None else None
    if kind is datetime.timedelta:
        return {"td": [value.days, value.seconds, value.microseconds]}
    if kind is collections.OrderedDict or kind is collections.Counter:
        pairs = [[e(k), e(v)] for k, v in value.items()]
        return {"od" if kind is collections.OrderedDict else "ctr": pairs}
    if kind is collections.defaultdict:
        factory = value.default_factory
        name = factory.__name__ if factory in _FACTORIES.values() else None
        return {"dd": [name, [[e(k), e(v)] for k, v in value.items()]]}
    if kind is collections.deque:
        return {"dq": [[e(v) for v in value], value.maxlen]}
    if kind is range:
        return {"rg": [value.start, value.stop, value.step]}
    # A view crosses as a view of a fresh dict (its own C code answers ``in`` and ``==``):
    # as a reference its stand-in would let the candidate's process answer them.
    if kind is _KEYS_VIEW:
        return {"dk": [e(v) for v in value]}
    if kind is _VALUES_VIEW:
        return {"dvs": [e(v) for v in value]}
    if kind is _ITEMS_VIEW:
        return {"di": [[e(k), e(v)] for k, v in value]}
    if kind is slice:  # obj[1:3] of a stand-in: the slice crosses, its bounds as plain data
        return {"sl": [e(v) for v in (value.start, value.stop, value.step)]}
    if isinstance(value, pathlib.PurePath) and kind.__module__ == "pathlib":
        return {"p": str(value)}
    fields = _namedtuple_fields(kind)
    if fields is not None:
        return {"nt": [kind.__name__, fields, [e(v) for v in value]]}
    return None


def _namedtuple_fields(kind: type) -> list[str] | None:
    """The fields of a class made by namedtuple/NamedTuple (or a subclass of one): it crosses
    as a namedtuple of the receiver's own making, with the same name and fields (the
    sender's methods stay behind)."""
    for klass in kind.__mro__:
        fields = vars(klass).get("_fields")
        if klass.__bases__ == (tuple,) and isinstance(fields, tuple):
            if all(isinstance(f, str) and f.isidentifier() for f in fields):
                return [str(f) for f in fields]
            return None
    return None


def decode(data: Any, deref: Callable[[Any], Any], depth: int = 0) -> Any:
    """A fresh value from tagged JSON; ``deref(form)`` turns a reference into a proxy."""
    if depth > MAX_DEPTH:
        raise NotPlainData(f"nested deeper than {MAX_DEPTH}")
    kind = type(data)
    if data is None or kind is bool or kind is str or kind is float:
        return data
    if kind is int:
        return data
    d = depth + 1
    if kind is list:
        if set(map(type, data)) <= _SIMPLE:
            return list(data)  # all plain already; a copy, so the JSON form stays as it came
        return [decode(v, deref, d) for v in data]
    if kind is not dict or len(data) != 1:
        raise NotPlainData(f"not plain data: a {kind.__name__}")
    ((tag, body),) = data.items()
    decoder = _DECODERS.get(tag)
    if decoder is None:
        raise NotPlainData(f"an unknown tag {str(tag)[:20]!r}")
    try:
        return decoder(body, deref, d)
    except NotPlainData:
        raise
    except (TypeError, ValueError, KeyError, IndexError, OverflowError, ArithmeticError) as exc:
        raise NotPlainData(f"a malformed {tag!r} value: {type(exc).__name__}") from None


def _items(body: Any, deref: Callable[[Any], Any], d: int) -> list[tuple[Any, Any]]:
    if type(body) is not list:
        raise NotPlainData("pairs are not a list")
    pairs = []
    for pair in body:
        if type(pair) is not list or len(pair) != 2:
            raise NotPlainData("a pair is not two items")
        pairs.append((decode(pair[0], deref, d), decode(pair[1], deref, d)))
    return pairs


def _seq(body: Any, deref: Callable[[Any], Any], d: int) -> list[Any]:
    if type(body) is not list:
        raise NotPlainData("a sequence is not a list")
    return [decode(v, deref, d) for v in body]


def _slice(bounds: list[Any]) -> slice:
    if len(bounds) != 3:
        raise NotPlainData("a slice has three bounds")
    return slice(*bounds)


def _text(body: Any) -> str:
    if type(body) is not str:
        raise NotPlainData("expected text")
    return body


def _float(body: Any, deref: Callable[[Any], Any], d: int) -> float:
    if body not in ("nan", "inf", "-inf"):
        raise NotPlainData("not a special float")
    return float(body)


def _bigint(body: Any, deref: Callable[[Any], Any], d: int) -> int:
    text = _text(body)
    if len(text) > 100_000:
        raise NotPlainData("an integer too large to cross")
    return int(text, 16)


def _namedtuple(body: Any, deref: Callable[[Any], Any], d: int) -> Any:
    name, fields, values = body
    fields = tuple(_text(f) for f in fields)
    if not (_text(name).isidentifier() and all(f.isidentifier() for f in fields)):
        raise NotPlainData("a namedtuple with names that are not identifiers")
    key = (name, fields)
    made = _namedtuples.get(key)
    if made is None:
        made = _namedtuples[key] = collections.namedtuple(name, fields, rename=True)
    return made(*_seq(values, deref, d))


def _defaultdict(body: Any, deref: Callable[[Any], Any], d: int) -> Any:
    name, pairs = body
    factory = _FACTORIES.get(name) if name is not None else None
    if name is not None and factory is None:
        raise NotPlainData("an unknown defaultdict factory")
    return collections.defaultdict(factory, _items(pairs, deref, d))


def _ref(body: Any, deref: Callable[[Any], Any], d: int) -> Any:
    return deref(body)


_DECODERS: dict[str, Callable[[Any, Callable[[Any], Any], int], Any]] = {
    "t": lambda b, r, d: tuple(_seq(b, r, d)),
    "d": lambda b, r, d: dict(_items(b, r, d)),
    "s": lambda b, r, d: set(_seq(b, r, d)),
    "fs": lambda b, r, d: frozenset(_seq(b, r, d)),
    "b": lambda b, r, d: base64.b64decode(_text(b), validate=True),
    "ba": lambda b, r, d: bytearray(base64.b64decode(_text(b), validate=True)),
    "c": lambda b, r, d: complex(*[float(x) for x in _seq(b, r, d)]),
    "f": _float,
    "ix": _bigint,
    "dec": lambda b, r, d: decimal.Decimal(_text(b)),
    "fr": lambda b, r, d: fractions.Fraction(*[int(x) for x in _seq(b, r, d)]),
    "dt": lambda b, r, d: datetime.datetime.fromisoformat(_text(b)),
    "da": lambda b, r, d: datetime.date.fromisoformat(_text(b)),
    "tm": lambda b, r, d: datetime.time.fromisoformat(_text(b)),
    "td": lambda b, r, d: datetime.timedelta(*[int(x) for x in _seq(b, r, d)]),
    "od": lambda b, r, d: collections.OrderedDict(_items(b, r, d)),
    "ctr": lambda b, r, d: collections.Counter(dict(_items(b, r, d))),
    "dd": _defaultdict,
    "dq": lambda b, r, d: collections.deque(_seq(b[0], r, d), b[1]),
    "rg": lambda b, r, d: range(*[int(x) for x in b]),
    "p": lambda b, r, d: pathlib.Path(_text(b)),
    "sl": lambda b, r, d: _slice(_seq(b, r, d)),
    "nt": _namedtuple,
    "dk": lambda b, r, d: dict.fromkeys(_seq(b, r, d)).keys(),
    "dvs": lambda b, r, d: dict(enumerate(_seq(b, r, d))).values(),
    "di": lambda b, r, d: dict(_items(b, r, d)).items(),
    "ref": _ref,
}


# -- exact builtin values: anchored values, submissions, re-checked operands ---------------


#: What ``substitute`` returns for a value it does not stand in for.
NO_SUBSTITUTE: Any = object()


class TooLarge(Exception):
    """Past the budget :func:`plain` was given (the value is skipped, never an error)."""


def plain(
    value: Any,
    *,
    base_of: Callable[[type], type | None] | None = None,
    budget: list[int] | None = None,
    depth: int = 0,
    substitute: Callable[[Any, type], Any] | None = None,
) -> Any:
    """``value`` in this module's tagged JSON, made of builtin values only (``None``,
    ``bool``, ``int``, ``float``, ``str``, ``bytes``, ``list``, ``tuple``, ``dict``, ``set``,
    ``frozenset``): anything else raises :class:`NotPlainData`. ``base_of(kind)`` names the
    builtin base a subclass is taken as (by the base type's own code), or None to refuse it;
    ``substitute(value, kind)`` may give a plain value that stands for an object of another
    type (:data:`NO_SUBSTITUTE` when it gives none); ``budget`` (``[nodes, chars]``) bounds
    the work: past it, :class:`TooLarge`. The same
    :func:`decode` reads it back (with no references)."""
    if budget is not None:
        budget[0] -= 1
        if budget[0] < 0:
            raise TooLarge
    if depth > MAX_DEPTH:
        raise NotPlainData(f"nested deeper than {MAX_DEPTH}")
    kind = type(value)
    if kind not in _EXACT_PLAIN and substitute is not None:
        found = substitute(value, kind)
        if found is not NO_SUBSTITUTE:
            kind, value = type(found), found
    if kind not in _EXACT_PLAIN:
        base = base_of(kind) if base_of is not None else None
        if base is None or base not in _AS_BASE:
            raise NotPlainData(f"{kind.__module__}.{kind.__qualname__}")
        kind, value = base, _AS_BASE[base](value)
    if kind is str or kind is bytes:
        if budget is not None:
            budget[1] -= len(value)
            if budget[1] < 0:
                raise TooLarge
        return value if kind is str else {"b": base64.b64encode(value).decode("ascii")}
    if value is None or kind is bool or kind is int or kind is float:
        found = encode(value, _no_reference)
        if budget is not None and type(found) is dict:  # a big int's hex digits count too
            budget[1] -= len(str(next(iter(found.values()))))
            if budget[1] < 0:
                raise TooLarge
        return found
    d = depth + 1
    items = [
        plain(v, base_of=base_of, budget=budget, depth=d, substitute=substitute)
        for v in _flat(value, kind)
    ]
    if kind is list:
        return items
    if kind is dict:
        return {"d": [items[i : i + 2] for i in range(0, len(items), 2)]}
    return {"t" if kind is tuple else "s" if kind is set else "fs": items}


_EXACT_PLAIN = frozenset(
    {type(None), bool, int, float, str, bytes, list, tuple, dict, set, frozenset}
)


def _flat(value: Any, kind: type) -> list[Any]:
    return [x for pair in value.items() for x in pair] if kind is dict else list(value)


def _no_reference(value: Any) -> Any:
    raise NotPlainData(f"{type(value).__module__}.{type(value).__qualname__}")


def decode_plain(data: Any) -> Any:
    """A fresh value from :func:`plain`'s JSON; a reference in it is :class:`NotPlainData`."""
    return decode(data, _no_reference)


def canonical(data: Any) -> str:
    """:func:`plain`'s JSON as one text that does not depend on a dict's or a set's order
    (anchored values compare by its digest)."""
    return json.dumps(_sorted(data), sort_keys=True, allow_nan=False, separators=(",", ":"))


def _sorted(data: Any) -> Any:
    if type(data) is list:
        return [_sorted(v) for v in data]
    if type(data) is dict and len(data) == 1:
        ((tag, body),) = data.items()
        if tag == "d":
            pairs = [[_sorted(k), _sorted(v)] for k, v in body]
            return {"d": sorted(pairs, key=lambda kv: json.dumps(kv[0], sort_keys=True))}
        if tag in ("s", "fs"):
            return {tag: sorted((_sorted(v) for v in body), key=json.dumps)}
        if tag == "t":
            return {"t": [_sorted(v) for v in body]}
    return data


def walk(value: Any, budget: int) -> Iterator[Any]:
    """``value`` and what exact builtin containers hold at any depth (dict keys and values,
    lists, tuples, sets), at most ``budget`` items, by the containers' own C iteration:
    nothing of a subclass's or an object's is called."""
    stack = [value]
    while stack and budget > 0:
        item = stack.pop()
        budget -= 1
        yield item
        kind = type(item)
        if kind is dict:
            stack.extend(dict.keys(item))
            stack.extend(dict.values(item))
        elif kind is list or kind is tuple or kind is set or kind is frozenset:
            stack.extend(item)
