"""Re-checked assertions, the child's half: called by the trusted test bytecode the parent
made (suite/rewritten.py), it sends each passing assertion's operands to the parent as plain
data, and tells the monitor what each trusted test module defines.

An operand is encoded from exact builtin types only (as anchored values are), within a small
budget, without calling any of its methods: a subclass or an object of its own is sent as its
type's name, never as a value it chose to show. The parent decodes the values and evaluates
the comparison itself (integrity/recheck.py). Too large or unencodable operands are skipped,
never failed. Without a parent (the bytecode run by hand, plugin mode) every call is a no-op.
"""

from __future__ import annotations

import contextlib
import os
import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any

from pytest_scorewright.protocol import values, wire
from pytest_scorewright.protocol.channel import MAX_FRAME, encode_frame

if TYPE_CHECKING:
    from pytest_scorewright.child.monitor import Monitor

#: Re-checked assertions sent per test, and bytes of them per run; beyond that, skipped.
PER_TEST = 200
PER_RUN_BYTES = 4 * 1024 * 1024
#: An operand larger than this (values, and characters of strings) is skipped.
MAX_NODES = 2000
MAX_CHARS = 16 * 1024
#: Methods through which a class of the candidate's decides a comparison.
_COMPARING = ("__eq__", "__ne__", "__bool__", "__len__", "__contains__", "__iter__", "__hash__")
_LT_GT = ("__lt__", "__le__", "__gt__", "__ge__")
_PLAIN_BASES = (int, float, str, bytes, tuple, list, dict, set, frozenset)
_type_dict = type.__dict__["__dict__"].__get__
_type_mro = type.__dict__["__mro__"].__get__
_type_module = type.__dict__["__module__"].__get__
_type_qualname = type.__dict__["__qualname__"].__get__


class _Channel:
    fd: int | None = None
    monitor: Monitor | None = None
    in_test = 0
    sent_bytes = 0


_channel = _Channel()


def attach(fd: int, monitor: Monitor | None) -> None:
    """Called by the reporter when pytest is configured in a sandboxed run."""
    _channel.fd, _channel.monitor = fd, monitor


def new_test() -> None:
    _channel.in_test = 0


def module_start(path: str) -> None:
    """First statement of a trusted test module: it runs the parent's bytecode."""
    if _channel.fd is not None:
        with contextlib.suppress(Exception):
            _emit({"type": wire.INSTRUMENTED, "module": path})


def module_done(path: str, namespace: dict[str, Any]) -> None:
    """Last statement of a trusted test module: what it defines is now known."""
    if _channel.monitor is not None:
        with contextlib.suppress(Exception):
            _channel.monitor.watch_module(path, namespace)


def check(site: str, op: str, *operands: Any) -> None:
    """A passing assertion at ``site``: send its operands. Never fails the test: whatever
    goes wrong here (an operand that cannot be framed, a closed pipe) skips the re-check."""
    if _channel.fd is None:
        return
    monitor = _channel.monitor
    with contextlib.suppress(Exception):
        if monitor is not None:
            monitor.check_oracles([site.rsplit(":", 2)[0]])
        if _channel.in_test >= PER_TEST or _channel.sent_bytes >= PER_RUN_BYTES:
            return
        _channel.in_test += 1
        sides = [_side(value, op, monitor) for value in operands]
        _emit({"type": wire.RECHECK, "site": site, "op": op, "sides": sides})


#: unittest's assertion methods (suite/instrument.py rewrites calls of these names): the
#: comparison each makes, and how many operands.
UNITTEST: dict[str, tuple[str, int]] = {
    "assertEqual": ("==", 2),
    "assertEquals": ("==", 2),
    "assertListEqual": ("==", 2),
    "assertTupleEqual": ("==", 2),
    "assertDictEqual": ("==", 2),
    "assertSetEqual": ("==", 2),
    "assertSequenceEqual": ("==", 2),
    "assertMultiLineEqual": ("==", 2),
    "assertNotEqual": ("!=", 2),
    "assertIn": ("in", 2),
    "assertNotIn": ("not in", 2),
    "assertIsNone": ("is None", 1),
    "assertIsNotNone": ("is not None", 1),
    "assertTrue": ("truth", 1),
    "assertFalse": ("not", 1),
    "assertLess": ("<", 2),
    "assertLessEqual": ("<=", 2),
    "assertGreater": (">", 2),
    "assertGreaterEqual": (">=", 2),
}


def call(site: str, name: str, method: Any, *args: Any, **kwargs: Any) -> Any:
    """``self.assertEqual(a, b)`` and friends: call the method; if it returned and it is
    unittest's own, re-check its operands."""
    result = method(*args, **kwargs)
    case = sys.modules.get("unittest.case")
    own = vars(getattr(case, "TestCase", object)).get(name) if case is not None else None
    if own is not None and getattr(method, "__func__", None) is own and name in UNITTEST:
        op, arity = UNITTEST[name]
        check(site, op, *args[:arity])
    return result


def _emit(message: dict[str, Any]) -> None:
    fd = _channel.fd
    if fd is None:
        return
    frame = memoryview(encode_frame(message))
    if len(frame) > MAX_FRAME:
        return  # cannot happen within the budgets; never an oversize error for the run
    _channel.sent_bytes += len(frame)
    with contextlib.suppress(OSError):
        while frame:
            frame = frame[os.write(fd, frame) :]


def _side(value: Any, op: str, monitor: Monitor | None) -> dict[str, Any]:
    budget = [MAX_NODES, MAX_CHARS]
    try:
        return {"v": values.plain(value, base_of=_plain_base, budget=budget)}
    except values.TooLarge:
        return {"skip": "large"}
    except values.NotPlainData:
        cls = type(value)
        name = f"{_type_module(cls, type)}.{_type_qualname(cls, type)}"
        return {"np": name[:120], "own": _own_comparison(cls, op, monitor)}
    except (RecursionError, ValueError, MemoryError):
        return {"skip": "unencodable"}


def _plain_base(kind: type) -> type | None:
    """The builtin base of a subclass that changes nothing about comparing, iterating or
    hashing (a namedtuple, a plain ``class Name(str)``), or None."""
    mro: tuple[type, ...] = _type_mro(kind, type)
    for cls in mro:
        if cls in _PLAIN_BASES:
            return cls
        if any(name in _type_dict(cls, type) for name in (*_COMPARING, *_LT_GT)):
            return None
    return None


def _own_comparison(kind: type, op: str, monitor: Monitor | None) -> bool:
    """The class comes from candidate code and decides the comparison itself."""
    if monitor is None:
        return False
    names = _COMPARING + (_LT_GT if op in ("<", "<=", ">", ">=") else ())
    for cls in _type_mro(kind, type):
        module = sys.modules.get(str(_type_module(cls, type)))
        file = str(vars(module).get("__file__") or "") if isinstance(module, ModuleType) else ""
        if not file.startswith(monitor.candidate_dir):
            continue
        if any(name in _type_dict(cls, type) for name in names):
            return True
    return False
