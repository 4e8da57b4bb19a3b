"""Re-checked assertions, the child's half: called by the trusted test bytecode the parent
made (suite/rewritten.py), it sends each passing assertion's operands to the parent as plain
data, and tells the monitor what each trusted test module defines.

An operand is encoded from exact builtin types only (as anchored values are), within a small
budget, without calling any of its methods: a subclass or an object of its own is sent as its
type's name, never as a value it chose to show. The parent decodes the values and evaluates
the comparison itself (integrity/recheck_evidence.py). Too large or unencodable operands are
skipped, never failed. Without a parent (the bytecode run by hand, plugin mode) every call is
a no-op.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable
from types import FunctionType, ModuleType
from typing import TYPE_CHECKING, Any

from pytest_scorewright.child.test_process import canaries
from pytest_scorewright.protocol import values, wire
from pytest_scorewright.protocol.channel import MAX_FRAME, encode_frame

if TYPE_CHECKING:
    from pytest_scorewright.child.shared.monitor import Monitor

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
_CONTAINER_IDS = frozenset(id(t) for t in (list, tuple, dict, set, frozenset))
#: Items of a call's result looked at for an object of the candidate's own.
INSIDE_NODES = 4096
_PLAIN_RESULT = {"v": None}


class _Channel:
    fd: int | None = None
    monitor: Monitor | None = None
    in_test = 0
    sent_bytes = 0
    returned: set[tuple[str, bool]] = set()  # noqa: RUF012 (one channel per process)
    #: Trusted test modules that ran the parent's bytecode, as it names them.
    modules: set[str] = set()  # noqa: RUF012
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
        if id(kind) in _CONTAINER_IDS:
            kind = _own_inside(value) or kind
        own = id(kind) not in _EXACT_IDS and _own_type(kind)
        if (site, own) not in _channel.returned:
            _tell_returned(site, kind, own)
    except Exception:  # noqa: S110 - an observation, never the test's failure
        pass
    return value


def _own_inside(value: Any, own: Callable[[type], bool] | None = None) -> type | None:
    """The type of the first object of the candidate's own inside exact builtin containers
    (dict keys and values, lists, tuples, sets, at any depth, the first
    :data:`INSIDE_NODES` items): a liar inside a plain dict answers the test's ``==`` as one
    returned alone would. Only exact containers are walked, with their own C iteration.
    ``own(kind)`` says what counts (by default :func:`_own_type`)."""
    counts = own or _own_type
    for item in values.walk(value, INSIDE_NODES):
        kind = type(item)
        if id(kind) not in _EXACT_IDS and counts(kind):
            return kind
    return None


def _tell_returned(site: str, kind: type, own: bool) -> None:
    if len(_channel.returned) >= RETURNED_PER_TEST:
        return
    _channel.returned.add((site, own))
    if _channel.sent_bytes < PER_RUN_BYTES:
        side = {"np": _type_name(kind), "own": True} if own else _PLAIN_RESULT
        _emit({"type": wire.RECHECK, "site": site, "op": "returned", "sides": [side]})


def given(op: str, kind: str) -> None:
    """With the candidate apart, an object of the candidate's was handed a test's value
    (``x in result``, ``result.method(5)``): say so once per test and place, the place being
    the innermost line of a trusted test module on the stack, and the operation. The parent
    holds it against the reference's run at the same place and operation
    (``handle_given_value``), never against the whole test."""
    if _channel.fd is None:
        return
    with contextlib.suppress(Exception):
        site = f"{_test_line()} {op[:40]}"
        if (site, True) in _channel.returned or len(_channel.returned) >= RETURNED_PER_TEST:
            return
        _channel.returned.add((site, True))
        if _channel.sent_bytes < PER_RUN_BYTES:
            side = {"np": kind[:120], "own": True}
            _emit({"type": wire.RECHECK, "site": site, "op": "given", "sides": [side]})


def _test_line() -> str:
    """``path:line`` of the innermost frame of a trusted test module (as module_start named
    it), or ``<test>`` where none is on the stack."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        for path in _channel.modules:
            if filename == path or filename.endswith("/" + path):
                return f"{path}:{frame.f_lineno}"
        frame = frame.f_back  # type: ignore[assignment]
    return "<test>"


def module_start(path: str) -> None:
    """First statement of a trusted test module: it runs the parent's bytecode."""
    if len(_channel.modules) < 4096:
        _channel.modules.add(path)
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
        # Two Enum members compared: by class and value, whatever ``__eq__`` their class has
        # (an agreeable one would decide otherwise); one compared with other data: by that.
        both = op in ("==", "!=") and len(operands) == 2 and all(map(_is_member, operands))
        sides = [_side(value, op, monitor, both) for value in operands]
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


def _side(value: Any, op: str, monitor: Monitor | None, members: bool = False) -> dict[str, Any]:
    budget = [MAX_NODES, MAX_CHARS]

    def substitute(item: Any, kind: type) -> Any:
        return _member_identity(item, kind, monitor, always=members)

    try:
        return {"v": values.plain(value, base_of=_plain_base, budget=budget, substitute=substitute)}
    except values.TooLarge:
        return {"skip": "large"}
    except values.NotPlainData:
        cls = type(value)
        name = _type_name(cls)
        if id(cls) in _CONTAINER_IDS:
            inner = _own_inside(value, lambda kind: _own_comparison(kind, op, monitor))
            if inner is not None:  # judged as the object inside would be, alone
                return {"np": f"{name} holding {_type_name(inner)}"[:120], "own": True}
        return {"np": name[:120], "own": _own_comparison(cls, op, monitor)}
    except (RecursionError, ValueError, MemoryError):
        return {"skip": "unencodable"}


def _is_member(value: Any) -> bool:
    kind, remote = type(value), _remote()
    if remote is not None and any(cls is remote for cls in _type_mro(kind, type)):
        return "_sw_identity" in object.__getattribute__(value, "__dict__")
    enum = sys.modules.get("enum")
    return enum is not None and any(cls is enum.Enum for cls in _type_mro(kind, type))


def _member_identity(value: Any, kind: type, monitor: Monitor | None, *, always: bool) -> Any:
    """An Enum member as plain data that is equal exactly when the members are the same:
    ``("<enum>", module, qualname, value)``. For a member of a plain Enum (no builtin mixin,
    no comparison of the candidate's own), or for any member when ``always`` (two members
    compared); :data:`values.NO_SUBSTITUTE` otherwise."""
    mro, remote = _type_mro(kind, type), _remote()
    if remote is not None and any(cls is remote for cls in mro):
        identity = object.__getattribute__(value, "__dict__").get("_sw_identity")
        return ("<identity>", identity) if identity is not None else values.NO_SUBSTITUTE
    enum = sys.modules.get("enum")
    if enum is None or not any(cls is enum.Enum for cls in mro):
        return values.NO_SUBSTITUTE
    if not always and (any(_is_plain_base(c) for c in mro) or _own_comparison(kind, "==", monitor)):
        return values.NO_SUBSTITUTE
    try:
        inner = values.plain(object.__getattribute__(value, "_value_"), budget=[200, 4096])
    except (values.NotPlainData, values.TooLarge, AttributeError, RecursionError):
        return values.NO_SUBSTITUTE
    return ("<enum>", str(_type_module(kind, type)), str(_type_qualname(kind, type)),
            values.canonical(inner))  # fmt: skip


def _remote() -> type | None:
    """The proxy's stand-in base, once the proxy is imported (with the candidate apart)."""
    proxy = sys.modules.get("pytest_scorewright.child.test_process.proxy")
    found = getattr(proxy, "RemoteObject", None) if proxy is not None else None
    return found if isinstance(found, type) else None


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
    remote = _remote()
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
