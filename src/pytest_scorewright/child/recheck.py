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
from types import FunctionType, ModuleType
from typing import TYPE_CHECKING, Any

from pytest_scorewright.child import canaries
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


#: Call results observed per test: one message per (call site, kind of result).
RETURNED_PER_TEST = 400
#: A call's result whose type defines none of these answers operators and methods as its
#: builtin base does (a namedtuple, ``class Name(str): pass``).
_HARMLESS = frozenset(
    {
        "__new__", "__init__", "__repr__", "__getnewargs__", "__doc__", "__module__",
        "__qualname__", "__slots__", "__dict__", "__weakref__", "__init_subclass__",
        "__class_getitem__", "__annotations__", "__match_args__", "__reduce__",
        "__reduce_ex__", "__getstate__", "__copy__", "__deepcopy__", "__orig_bases__",
        "__parameters__", "__firstlineno__", "__static_attributes__",
    }
)  # fmt: skip
_EXACT_TYPES = (type(None), bool, int, float, complex, str, bytes, bytearray, list, tuple)
_EXACT_IDS = frozenset(
    id(t) for t in (*_EXACT_TYPES, dict, set, frozenset, range, slice, type(...))
)
_PLAIN_RESULT = {"v": None}


class _Channel:
    fd: int | None = None
    monitor: Monitor | None = None
    in_test = 0
    sent_bytes = 0
    returned: set[tuple[str, bool]] = set()  # noqa: RUF012 (one channel per process)
    #: id(type) -> (the type, whether its objects are the candidate's own).
    own_types: dict[int, tuple[type, bool]] = {}  # noqa: RUF012


_channel = _Channel()


def attach(fd: int, monitor: Monitor | None) -> None:
    """Called by the reporter when pytest is configured in a sandboxed run."""
    _channel.fd, _channel.monitor = fd, monitor


def new_test() -> None:
    _channel.in_test = 0
    _channel.returned = set()
    canaries.new_test()


def returned(site: str, value: Any) -> Any:
    """A call in the trusted tests returned ``value`` (the bytecode wraps every call there):
    say once per test and site whether it is an object of the candidate's own, which answers
    the test's operators and methods itself. The parent holds it against a call site where
    the reference's run got plain data (``returned_handle``). Returns ``value`` untouched."""
    if _channel.fd is None:
        return value
    try:  # not contextlib.suppress: this runs for every call in the tests
        kind = type(value)
        own = id(kind) not in _EXACT_IDS and _own_type(kind)
        if (site, own) not in _channel.returned:
            _tell_returned(site, kind, own)
    except Exception:  # noqa: S110 - an observation, never the test's failure
        pass
    return value


def _tell_returned(site: str, kind: type, own: bool) -> None:
    if len(_channel.returned) >= RETURNED_PER_TEST:
        return
    _channel.returned.add((site, own))
    if _channel.sent_bytes < PER_RUN_BYTES:
        side = {"np": _type_name(kind), "own": True} if own else _PLAIN_RESULT
        _emit({"type": wire.RECHECK, "site": site, "op": "returned", "sides": [side]})


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
        message: dict[str, Any] = {"type": wire.RECHECK, "site": site, "op": op, "sides": sides}
        passed = canaries.canary(op, operands, sides)
        if passed is not None:
            message["canary"] = passed
        _emit(message)


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


def _type_name(cls: type) -> str:
    return f"{_type_module(cls, type)}.{_type_qualname(cls, type)}"[:120]


def _own_type(kind: type) -> bool:
    known = _channel.own_types.get(id(kind))
    if known is not None and known[0] is kind:
        return known[1]
    own = _decides_for_itself(kind)
    if len(_channel.own_types) < 4096:
        _channel.own_types[id(kind)] = (kind, own)
    return own


def _decides_for_itself(kind: type) -> bool:
    """Objects of ``kind`` come from the candidate's code and answer with behaviour of their
    own: a class of the candidate's (or a stand-in for one, with the candidate apart), or a
    builtin subclass of the candidate's that replaces any of its base's methods. Read from
    the type's own slots, never through its metaclass."""
    proxy = sys.modules.get("pytest_scorewright.child.proxy")
    remote = getattr(proxy, "RemoteObject", None) if proxy is not None else None
    mro: tuple[type, ...] = _type_mro(kind, type)
    if remote is not None and any(cls is remote for cls in mro):
        return True
    monitor = _channel.monitor
    if monitor is None:
        return False
    base = next((cls for cls in mro if _is_plain_base(cls)), None)
    for cls in mro:
        if cls is base or cls is object:
            break
        if not _from_candidate(cls, monitor.candidate_dir):
            continue
        if base is None or _replaces_behaviour(cls, base):
            return True
    return False


def _replaces_behaviour(cls: type, base: type) -> bool:
    """``cls`` gives one of its builtin base's methods (or attribute lookup) code of its own:
    not the base's C code, nor the standard library's (an Enum's ``__str__``)."""
    answers = set(dir(base)) | {"__getattr__", "__getattribute__"}
    for name, attr in list(_type_dict(cls, type).items())[:500]:
        if name in _HARMLESS or name not in answers or attr is None:
            continue
        inner = getattr(attr, "__func__", attr) if type(attr) in _WRAPPERS else attr
        if type(inner) is FunctionType:
            if not inner.__code__.co_filename.startswith(_STDLIB):
                return True
        elif type(inner) not in _C_CALLABLES:
            return True
    return False


def _from_candidate(cls: type, candidate_dir: str) -> bool:
    module = sys.modules.get(str(_type_module(cls, type)))
    file = vars(module).get("__file__") if isinstance(module, ModuleType) else None
    if isinstance(file, str) and file.startswith(candidate_dir):
        return True
    for attr in list(_type_dict(cls, type).values())[:200]:
        inner = getattr(attr, "__func__", attr) if type(attr) in _WRAPPERS else attr
        if type(inner) is FunctionType and inner.__code__.co_filename.startswith(candidate_dir):
            return True
    return False


_WRAPPERS = (staticmethod, classmethod)
#: The standard library's own directory (site-packages included where it lies below it).
_STDLIB = os.path.dirname(os.__file__) + "/"
#: Methods written in C: the builtin base's own, copied (``__hash__ = str.__hash__``).
_C_CALLABLES = (
    type(str.__eq__),  # wrapper_descriptor
    type(str.startswith),  # method_descriptor
    type(len),  # builtin_function_or_method
)


def _is_plain_base(cls: type) -> bool:
    # By identity: ``in`` would ask the class's metaclass (``__eq__``), candidate code.
    return any(cls is base for base in _PLAIN_BASES)


def _plain_base(kind: type) -> type | None:
    """The builtin base of a subclass that changes nothing about comparing, iterating or
    hashing (a namedtuple, a plain ``class Name(str)``), or None."""
    mro: tuple[type, ...] = _type_mro(kind, type)
    for cls in mro:
        if _is_plain_base(cls):
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
