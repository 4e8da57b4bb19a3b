"""The candidate's objects as the test process holds them: stand-ins that can only ask its
process to act (child/test_process/proxy.py's :class:`Session` carries each request).

A stand-in forwards attribute access, calls and operators to the candidate's process; it
compares equal only to another stand-in (never to a plain value), and an Enum member or a
dataclass instance compares here by what it was when it crossed. A class of the candidate's
is a stand-in class: calling it constructs there; its exception classes are raised here as
stand-in classes whose bases are this process's own where raising them means the same.
"""

from __future__ import annotations

import builtins
import contextlib
import importlib
import sys
from collections.abc import Iterator, Sequence
from typing import Any, Protocol

from pytest_scorewright.protocol import values


class Session(Protocol):
    """What a stand-in asks of child/test_process/proxy.py's ``Session``: the one link to the
    candidate's process (a protocol, so that this module imports nothing above it)."""

    derefs: int

    def request(self, op: str, target: Any = None, *, raw: bool = False, **fields: Any) -> Any: ...

    def encode(self, value: Any) -> Any: ...

    def decode(self, data: Any) -> Any: ...

    def deref(self, form: Any) -> Any: ...

    def note_handle(self, code: str, what: str) -> None: ...

    def note_not_plain(self, theirs: str, ours: str) -> None: ...


_MUTABLE = (list, dict, set, bytearray)


#: Modules whose exception classes are never raised here as themselves: they would end a test
#: as skipped, or the session.
_MACHINERY = ("unittest", "_pytest", "pytest", "pluggy", "pytest_scorewright")


class CandidateError(Exception):
    """The candidate raised something that cannot be raised here as itself."""


class NotCrossable(TypeError):
    """A value that cannot be passed to the candidate's process."""


class Ref:
    """Where a stand-in's object lives: a handle in one incarnation of the candidate's process,
    and, for what its module can find again, a path that outlives a crash."""

    __slots__ = ("handle", "incarnation", "path", "session")

    def __init__(
        self, session: Session, handle: int, incarnation: int, path: tuple[str, str] | None
    ) -> None:
        self.session, self.handle, self.incarnation, self.path = session, handle, incarnation, path


class StandIn:
    """Base of everything that stands in for an object of the candidate's process."""

    _sw_ref: Ref

    def _sw_ask(self, op: str, *args: Any, **fields: Any) -> Any:
        ref = self.__dict__["_sw_ref"]
        if args:
            fields["args"] = ref.session.encode(list(args))
        return ref.session.request(op, self, **fields)


class RemoteFunction(StandIn):
    """A function of the candidate's: calling it calls it there."""

    def __init__(self, ref: Ref, name: str, qualname: str) -> None:
        self.__dict__["_sw_ref"] = ref
        self.__name__ = name
        self.__qualname__ = qualname or name

    def __call__(self, /, *args: Any, **kwargs: Any) -> Any:
        return _call(self, "call", None, args, kwargs)

    def __repr__(self) -> str:
        return f"<candidate function {self.__qualname__}>"


class RemoteIterator(StandIn):
    """An iterator or generator of the candidate's; items cross in growing batches."""

    def __init__(self, ref: Ref) -> None:
        self.__dict__["_sw_ref"] = ref
        self._sw_buffer: list[Any] = []
        self._sw_done = False
        self._sw_batch = 1

    def __iter__(self) -> RemoteIterator:
        return self

    def __next__(self) -> Any:
        if not self._sw_buffer:
            if self._sw_done:
                raise StopIteration
            ref = self.__dict__["_sw_ref"]
            answer = ref.session.request("next", self, raw=True, n=self._sw_batch)
            self._sw_batch = min(self._sw_batch * 2, 256)
            try:
                items = ref.session.decode(answer["items"]) if type(answer) is dict else None
            except values.NotPlainData:
                items = None
            if type(items) is not list:
                raise CandidateError("the candidate's process answered next() with malformed data")
            self._sw_done = bool(answer.get("done"))
            self._sw_buffer = list(reversed(items))
            if not self._sw_buffer:
                raise StopIteration
        return self._sw_buffer.pop()

    def __repr__(self) -> str:
        return "<candidate iterator>"


def _forward(op: str) -> Any:
    def method(self: RemoteObject, *args: Any) -> Any:
        _note_values_given(self, op, args)
        return self._sw_ask(op, *args)

    method.__name__ = f"__{op}__"
    return method


def identity_from(found: Any) -> str | None:
    """What an object of the candidate's compares by, as its process described it when the
    object first crossed (child/apart/candidate.py ``identity_from``: an Enum member's class and
    value, a dataclass instance's class and fields), as canonical text. Fixed then: nothing
    the candidate's process does later changes what it compares as."""
    try:
        return values.canonical(_checked(found, 0))
    except (values.NotPlainData, TypeError, ValueError, RecursionError):
        return None


def _checked(found: Any, depth: int) -> Any:
    """``found`` if it is an identity's well-formed JSON; NotPlainData otherwise."""
    if depth > 20 or type(found) is not list or len(found) != 4:
        raise values.NotPlainData("not an identity")
    kind, module, qualname, inner = found
    if kind not in ("enum", "dc") or type(module) is not str or type(qualname) is not str:
        raise values.NotPlainData("not an identity")
    fields = [inner] if kind == "enum" else inner
    if type(fields) is not list:
        raise values.NotPlainData("not an identity")
    for field in fields:
        if type(field) is dict and set(field) == {"v"}:
            values.decode_plain(field["v"])
        else:
            _checked(field, depth + 1)
    return found


def _forward_stand_in_only(op: str) -> Any:
    # Equality and order with a plain value are never the candidate's to decide: an object of
    # its own compares only with another of its own. Enum members and dataclass instances
    # compare here, by what they were when they crossed: ``result == solution.Color.RED``
    # is two stand-ins, and an agreeable class's ``__eq__`` would otherwise decide it.
    def method(self: RemoteObject, other: Any) -> Any:
        if op in ("eq", "ne") and isinstance(other, StandIn):
            mine, theirs = self.__dict__.get("_sw_identity"), other.__dict__.get("_sw_identity")
            if mine is not None or theirs is not None:
                return (mine == theirs) is (op == "eq")
        if not isinstance(other, StandIn):
            if op in ("eq", "ne"):
                # Where the reference gave plain data (the parent sets this against what the
                # reference did in the same test), an object of the candidate's own compared
                # with an expected value is how an always-equal or lazy result would try.
                session = self.__dict__["_sw_ref"].session
                session.note_not_plain(type(self).__name__, type(other).__name__)
            return NotImplemented
        return self._sw_ask(op, other)

    method.__name__ = f"__{op}__"
    return method


class RemoteObject(StandIn):
    """An object of the candidate's; attribute access, calls and operators go to its process."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_sw_") or name in ("__wrapped__", "__func__"):
            raise AttributeError(name)
        if name in type(self).__dict__.get("_sw_methods", ()) or any(
            name in vars(k).get("_sw_methods", ()) for k in type(self).__mro__
        ):
            return _BoundMethod(self, name)
        return self._sw_ask("getattr", name=name)

    def __setattr__(self, name: str, value: Any) -> None:
        _note_values_given(self, f"setattr {name}", (value,))
        self._sw_ask("setattr", name=name, value=self.__dict__["_sw_ref"].session.encode(value))

    def __delattr__(self, name: str) -> None:
        self._sw_ask("delattr", name=name)

    def __call__(self, /, *args: Any, **kwargs: Any) -> Any:
        return _call(self, "call", None, args, kwargs)

    def __repr__(self) -> str:
        try:
            return str(self._sw_ask("repr"))
        except Exception as exc:  # a repr must not fail, least of all in a failure report
            return f"<candidate object: repr unavailable ({type(exc).__name__})>"

    def __str__(self) -> str:
        return str(self._sw_ask("str"))

    def __bool__(self) -> bool:
        return bool(self._sw_ask("bool"))

    def __len__(self) -> int:
        return _int(self._sw_ask("len"), "len")

    def __hash__(self) -> int:
        identity = self.__dict__.get("_sw_identity")
        if identity is not None:  # consistent with equality, which is decided here for these
            return hash(identity)
        return _int(self._sw_ask("hash"), "hash")

    def __index__(self) -> int:
        return _int(self._sw_ask("index"), "index")

    def __int__(self) -> int:
        return _int(self._sw_ask("int"), "int")

    def __float__(self) -> float:
        value = self._sw_ask("float")
        if type(value) is not float:
            raise TypeError("the candidate's __float__ did not return a float")
        return value

    def __iter__(self) -> Iterator[Any]:
        found = self._sw_ask("iter")
        return found if isinstance(found, RemoteIterator) else iter(found)

    def __format__(self, spec: str) -> str:
        return str(self._sw_ask("format", spec))

    def __dir__(self) -> list[str]:
        names = self._sw_ask("dir")
        return [str(n) for n in names] if isinstance(names, list) else []

    def __copy__(self) -> Any:
        return self._sw_ask("copy")

    def __deepcopy__(self, memo: Any) -> Any:
        return self._sw_ask("deepcopy")

    def __reduce_ex__(self, protocol: Any) -> Any:
        raise NotCrossable("an object of the candidate's process cannot be pickled")

    def __enter__(self) -> Any:
        return self._sw_ask("enter")

    def __exit__(self, kind: Any, value: Any, tb: Any) -> bool:
        # The test's exception stays here (its traceback holds the test's frames): the
        # candidate's __exit__ is told nothing of it, and cannot suppress it.
        answer = self._sw_ask("exit", None, None, None)
        return kind is None and bool(answer)

    __eq__ = _forward_stand_in_only("eq")
    __ne__ = _forward_stand_in_only("ne")
    __lt__ = _forward_stand_in_only("lt")
    __le__ = _forward_stand_in_only("le")
    __gt__ = _forward_stand_in_only("gt")
    __ge__ = _forward_stand_in_only("ge")


_FORWARDED = (
    "getitem setitem delitem contains add sub mul truediv floordiv mod pow matmul and or xor "
    "lshift rshift radd rsub rmul rtruediv rfloordiv rmod rpow neg pos abs invert round reversed"
)


for _op in _FORWARDED.split():
    setattr(RemoteObject, f"__{_op}__", _forward(_op))


class _BoundMethod:
    """``obj.method`` of a candidate object, called in one request."""

    __slots__ = ("name", "owner")

    def __init__(self, owner: RemoteObject, name: str) -> None:
        self.owner, self.name = owner, name

    def __call__(self, /, *args: Any, **kwargs: Any) -> Any:
        _note_values_given(self.owner, self.name, (*args, *kwargs.values()))
        return _call(self.owner, "callmethod", self.name, args, kwargs)

    def __repr__(self) -> str:
        return f"<candidate method {self.name}>"


def _call(
    target: StandIn, op: str, name: str | None, args: Sequence[Any], kwargs: dict[str, Any]
) -> Any:
    session = target.__dict__["_sw_ref"].session
    answer = send_call(session, target, op, name, args, kwargs)
    derefs = session.derefs
    try:
        value = session.decode(answer["value"])
        crossed_a_reference = session.derefs != derefs
        mutated = {k: session.decode(v) for k, v in _pairs(answer.get("mutated"))}
    except values.NotPlainData as exc:
        raise CandidateError(
            f"the candidate's process answered with malformed data: {exc}"
        ) from None
    if crossed_a_reference:  # else plain data through and through: no walk on the clock
        _note_handle_returned(session, target, name, value)
    for position, new in mutated.items() if type(mutated) is dict else ():
        index = int(position) if str(position).isdigit() else -1
        if (
            0 <= index < len(args)
            and type(args[index]) in _MUTABLE
            and type(new) is type(args[index])
        ):
            _replace_contents(args[index], new)
    return value


def send_call(
    session: Session,
    target: StandIn,
    op: str,
    name: str | None,
    args: Sequence[Any],
    kwargs: dict[str, Any],
) -> dict[str, Any]:
    """A call's request, and its answer as it came (a dict with a ``value``)."""
    fields: dict[str, Any] = {"args": session.encode(list(args)), "kwargs": session.encode(kwargs)}
    if name is not None:
        fields["name"] = name
    answer = session.request(op, target, raw=True, **fields)
    if type(answer) is not dict or "value" not in answer:
        raise CandidateError("the candidate's process answered a call with malformed data")
    return answer


def _note_values_given(target: StandIn, op: str, args: Sequence[Any]) -> None:
    if any(not isinstance(arg, StandIn) for arg in args):
        # Told by place and operation (child/test_process/recheck.py), held against the reference's
        # objects at the same place: never allowed for a whole test.
        recheck = sys.modules.get("pytest_scorewright.child.test_process.recheck")
        if recheck is not None:
            recheck.given(op.split(" ")[0], type(target).__name__)


def _note_handle_returned(session: Session, target: StandIn, name: str | None, value: Any) -> None:
    # A generator or a function the candidate returns only ever yields plain data or is
    # called; an object of its own answers operators and methods, so it counts.
    if _holds_stand_in(value):
        # The stand-in's own name, never a getattr that would ask the candidate (a round
        # trip, and an exception of its choosing).
        callee = name or target.__dict__.get("__qualname__") or type(target).__name__
        session.note_handle("returned_handle", f"{callee} returned an object of its own")


def _holds_stand_in(value: Any, budget: int = 4096) -> bool:
    """``value`` is, or holds at any depth (dict keys and values, lists, tuples, sets; the
    first ``budget`` items), an object of the candidate's own that answers operators."""
    return any(isinstance(item, RemoteObject) for item in values.walk(value, budget))


def _pairs(found: Any) -> list[tuple[str, Any]]:
    return [(str(k), v) for k, v in found.items()] if type(found) is dict else []


def _replace_contents(old: Any, new: Any) -> None:
    if isinstance(old, (list, bytearray)):
        old[:] = new
    else:
        old.clear()
        old.update(new)


class _StandInClassMeta(type):
    """The type of stand-in classes: calling one constructs in the candidate's process;
    class attributes, iteration (an Enum) and ``isinstance`` go there too."""

    def __call__(cls, /, *args: Any, **kwargs: Any) -> Any:
        return _call(cls._sw_holder(), "call", None, args, kwargs)

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("_sw_") or name.startswith("__"):
            raise AttributeError(name)
        return cls._sw_holder()._sw_ask("getattr", name=name)

    def __iter__(cls) -> Iterator[Any]:
        found = cls._sw_holder()._sw_ask("iter")
        return found if isinstance(found, RemoteIterator) else iter(found)

    def __len__(cls) -> int:
        return _int(cls._sw_holder()._sw_ask("len"), "len")

    def __getitem__(cls, key: Any) -> Any:
        return cls._sw_holder()._sw_ask("getitem", key)

    def _sw_holder(cls) -> StandIn:
        holder = StandIn.__new__(StandIn)
        holder.__dict__["_sw_ref"] = cls._sw_class_ref
        return holder


def stand_in_class(session: Session, ref: Ref, info: dict[str, Any]) -> type:
    name = str(info.get("name", "Remote"))
    name = name if name.isidentifier() else "Remote"
    namespace = {
        "__module__": str(info.get("module", "candidate")),
        "__qualname__": str(info.get("qualname", name)),
        "_sw_class_ref": ref,
    }
    found = [_base(session, b, exception=bool(info.get("exc"))) for b in info.get("bases", [])]
    bases = [b for b in found if b is not None]
    if info.get("exc"):
        candidates = tuple(bases) or (Exception,)
        try:
            return type(name, candidates, namespace)
        except TypeError:  # bases whose layouts conflict: the nearest that works
            return type(name, (Exception,), namespace)
    methods = info.get("methods", [])
    namespace["_sw_methods"] = frozenset(str(m) for m in methods) if type(methods) is list else ()
    stand_in_bases = tuple(b for b in bases if issubclass(b, RemoteObject)) or (RemoteObject,)
    try:
        return _StandInClassMeta(name, stand_in_bases, namespace)
    except TypeError:
        return _StandInClassMeta(name, (RemoteObject,), namespace)


def _base(session: Session, base: Any, *, exception: bool) -> type | None:
    if type(base) is not dict:
        return None
    if "builtin" in base:
        found = getattr(builtins, str(base["builtin"]), None)
        if exception:
            if isinstance(found, type) and issubclass(found, Exception):
                return found
            return Exception  # KeyboardInterrupt, SystemExit: never as themselves here
        return None
    if "std" in base:
        module, qualname = (str(x) for x in base["std"])
        found = local_exception_class(module, qualname) if exception else None
        return found
    if "ref" in base:
        with contextlib.suppress(values.NotPlainData):
            found = session.deref(base["ref"])
            if isinstance(found, type):
                return found
    return None


def local_exception_class(module: str, qualname: str) -> type[BaseException] | None:
    """The exception class ``module.qualname`` of this process, where raising it here means
    what it meant there: builtins and the standard library, never test machinery (a SkipTest
    would skip the test) and never an escape (KeyboardInterrupt, GeneratorExit)."""
    if module.split(".")[0] in _MACHINERY:
        return None
    if module == "builtins":
        found = getattr(builtins, qualname, None)
    elif module.split(".")[0] in sys.stdlib_module_names:
        try:
            found = importlib.import_module(module)
            for part in qualname.split("."):
                found = getattr(found, part)
        except Exception:
            return None
    else:
        return None
    if not isinstance(found, type) or not issubclass(found, BaseException):
        return None
    if found is SystemExit or issubclass(found, Exception):
        return found  # SystemExit inside a test fails it, as it would in process
    return None


def _int(value: Any, what: str) -> int:
    if type(value) is not int:
        raise TypeError(f"the candidate's __{what}__ did not return an int")
    return value
