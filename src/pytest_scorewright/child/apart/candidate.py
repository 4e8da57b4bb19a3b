"""The candidate's own process: it imports the candidate and answers the test process's calls.

Started (confined, with the tests hidden from it) by the run's spawner (child/setup/processes.py)
when the test process first imports the candidate, and again if it dies. Everything here is the
candidate's domain: it may change any of it, and gains nothing by doing so, because all it can
send back is plain data (protocol/values.py) and references the test process only lets it act
through. So this side keeps no secret and checks nothing on the test process's behalf.

Objects that cannot cross as plain data stay here, in a table, and cross as a reference::

    {"h": handle, "k": "fn"|"cls"|"obj"|"mod"|"it", "i": {...}}

``i`` describes what the test process needs to stand in for it: a function's name, a class's
name, bases and methods (once per class), an object's class, and a ``path`` (module,
qualified name) for anything reachable from its module, by which a new candidate process can
find it again after a crash.
"""

from __future__ import annotations

import builtins
import contextlib
import copy
import faulthandler
import importlib
import inspect
import io
import operator
import os
import sys
import traceback
import types
import warnings
from collections.abc import Callable, Iterator
from typing import Any

from pytest_scorewright.child.shared import coverage_probe
from pytest_scorewright.child.shared.imports import prefer_candidate
from pytest_scorewright.child.shared.monitor import Monitor, arm
from pytest_scorewright.protocol import values, wire
from pytest_scorewright.protocol.rpc import Endpoint, RemoteError
from pytest_scorewright.protocol.wire import MonitorPaths

#: Items a ``next`` request may return at once (iteration crosses in batches).
MAX_BATCH = 256
#: Output one call may forward to the test process; the rest is counted, not sent.
MAX_OUTPUT = 1 << 20

_MUTABLE = (list, dict, set, bytearray)

#: Operations on an object, by the name the test process asks for them.
OPERATIONS: dict[str, Callable[..., Any]] = {
    "len": len,
    "iter": iter,
    "repr": repr,
    "str": str,
    "bool": bool,
    "hash": hash,
    "int": int,
    "float": float,
    "index": operator.index,
    "getitem": operator.getitem,
    "setitem": operator.setitem,
    "delitem": operator.delitem,
    "contains": operator.contains,
    "eq": operator.eq,
    "ne": operator.ne,
    "lt": operator.lt,
    "le": operator.le,
    "gt": operator.gt,
    "ge": operator.ge,
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "truediv": operator.truediv,
    "floordiv": operator.floordiv,
    "mod": operator.mod,
    "pow": operator.pow,
    "matmul": operator.matmul,
    "and": operator.and_,
    "or": operator.or_,
    "xor": operator.xor,
    "lshift": operator.lshift,
    "rshift": operator.rshift,
    "radd": lambda a, b: b + a,
    "rsub": lambda a, b: b - a,
    "rmul": lambda a, b: b * a,
    "rtruediv": lambda a, b: b / a,
    "rfloordiv": lambda a, b: b // a,
    "rmod": lambda a, b: b % a,
    "rpow": lambda a, b: b**a,
    "neg": operator.neg,
    "pos": operator.pos,
    "abs": abs,
    "invert": operator.invert,
    "round": round,
    "reversed": reversed,
    "enter": lambda o: o.__enter__(),
    "exit": lambda o, *a: o.__exit__(*a),
    "format": format,
    "dir": dir,
    "instancecheck": isinstance,
    "subclasscheck": issubclass,
    "copy": copy.copy,
    "deepcopy": copy.deepcopy,
}


class _Forward(io.TextIOBase):
    """sys.stdout/sys.stderr of the candidate: writes go to the test process with the reply
    of the call that made them, so ``capsys`` in the test sees them."""

    def __init__(self, server: CandidateServer, name: str) -> None:
        self.server, self.name = server, name

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self.server.output(self.name, str(text))
        return len(text)


class CandidateServer:
    """Answers the test process's requests with the candidate's objects."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self.objects: dict[int, Any] = {}
        self.handles: dict[int, int] = {}  # id(obj) -> handle
        self.described: set[int] = set()  # class handles whose description was sent
        self.next_handle = 1
        self.pending_output: list[list[str]] = []
        self.pending_findings: list[list[str]] = []
        self.output_size = 0
        self.warnings: list[Any] = []
        self.monitor: Monitor | None = None
        #: With coverage: coverage.py's measurement, and the directory it measures.
        self.coverage: tuple[Any, str] | None = None

    # -- references both ways -------------------------------------------------------------

    def ref(self, obj: Any) -> dict[str, Any]:
        """The reference form of one of our objects (a proxy of theirs goes back as theirs)."""
        if isinstance(obj, TheirObject):
            return {"w": obj._sw_id}
        key = id(obj)
        handle = self.handles.get(key)
        if handle is None:
            handle = self.next_handle
            self.next_handle += 1
            self.handles[key] = handle
            self.objects[handle] = obj
        form: dict[str, Any] = {"h": handle, "k": _kind(obj)}
        info: dict[str, Any] = {}
        path = _path_of(obj)
        if path is not None:
            info["path"] = path
        if form["k"] == "cls":
            if handle not in self.described:
                self.described.add(handle)
                info.update(self._describe(obj))
        elif form["k"] == "fn":
            info["name"] = str(getattr(obj, "__name__", "function"))
            info["qualname"] = str(getattr(obj, "__qualname__", info["name"]))
        elif form["k"] == "mod":
            info["name"] = obj.__name__
        else:
            info["cls"] = self.ref(type(obj))
            try:  # a field never set, a property that raises: then no identity, a stand-in
                identity = _identity(obj)
            except Exception:
                identity = None
            if identity is not None:
                info["id"] = identity
        form["i"] = info
        return form

    def _describe(self, cls: type) -> dict[str, Any]:
        bases: list[Any] = []
        for base in cls.__bases__:
            if base is object:
                continue
            if base.__module__ == "builtins":
                bases.append({"builtin": base.__name__})
            elif _is_stdlib(base.__module__):
                bases.append({"std": [base.__module__, base.__qualname__]})
            else:
                bases.append({"ref": self.ref(base)})
        methods = sorted(
            name
            for klass in cls.__mro__
            if klass is not object
            for name, value in vars(klass).items()
            if not name.startswith("__") and inspect.isfunction(value)
        )
        return {
            "name": cls.__name__,
            "qualname": cls.__qualname__,
            "module": str(cls.__module__),
            "exc": issubclass(cls, BaseException),
            "bases": bases,
            "methods": methods,
        }

    def deref(self, form: Any) -> Any:
        """One of our objects from its reference, or a proxy for one of theirs."""
        if type(form) is not dict:
            raise values.NotPlainData("a reference that is not an object")
        if "h" in form:
            try:
                return self.objects[int(form["h"])]
            except (KeyError, TypeError, ValueError):
                raise LookupError(
                    "an object of this candidate process that no longer exists"
                ) from None
        if "path" in form:
            module, qualname = form["path"]
            return _resolve(str(module), str(qualname))
        if "w" in form:
            return TheirObject(self, int(form["w"]), str(form.get("k", "obj")))
        raise values.NotPlainData("an unknown reference")

    def encode(self, value: Any) -> Any:
        return values.encode(value, self.ref, by_value=True)

    def decode(self, data: Any) -> Any:
        return values.decode(data, self.deref)

    # -- serving ---------------------------------------------------------------------------

    def serve(self, request: dict[str, Any]) -> Any:
        op = request.get("op")
        released = request.get("rel")
        if type(released) is list:
            self._release(released)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            value = self._serve(str(op), request)
        self.warnings = [
            [_describe_warning_class(w.category, self), str(w.message), str(w.filename), w.lineno]
            for w in caught[:100]
        ]
        return value

    def _serve(self, op: str, request: dict[str, Any]) -> Any:
        if op == "import":
            return self.encode(importlib.import_module(str(request["module"])))
        if op == "coverage":  # the session's end: the lines of the candidate's files that ran
            files, lines = (
                coverage_probe.executed(self.coverage[0], self.coverage[1])
                if self.coverage is not None
                else ([], [])
            )
            return self.encode({"files": files, "lines": lines})
        if op == "check":  # the end of a test: what the candidate replaced here, as evidence
            if self.monitor is not None:
                self.monitor.check_between_calls()
            return None
        target = self.decode(request.get("target"))
        if op == "getattr":
            return self.encode(getattr(target, str(request["name"])))
        if op == "setattr":
            setattr(target, str(request["name"]), self.decode(request.get("value")))
            return None
        if op == "delattr":
            delattr(target, str(request["name"]))
            return None
        if op in ("call", "callmethod"):
            if op == "callmethod":
                target = getattr(target, str(request["name"]))
            return self._call(target, request)
        if op == "next":
            return self._next_batch(target, int(request.get("n", 1)))
        operation = OPERATIONS.get(op)
        if operation is None:
            raise ValueError(f"unknown operation {op[:40]!r}")
        args = self.decode(request.get("args", []))
        return self.encode(operation(target, *args))

    def _call(self, function: Any, request: dict[str, Any]) -> Any:
        sent = request.get("args", [])
        args = self.decode(sent)
        kwargs = self.decode(request.get("kwargs", {"d": []}))
        if type(args) is not list or type(kwargs) is not dict:
            raise TypeError("malformed call arguments")
        mutable = [i for i, a in enumerate(args) if type(a) in _MUTABLE]
        result = function(*args, **kwargs)
        changed = {}
        for i in mutable:
            after = self.encode(args[i])
            if after != sent[i]:  # as it came: changed in place by the call
                changed[str(i)] = after
        reply: dict[str, Any] = {"value": self.encode(result)}
        if changed:
            reply["mutated"] = changed
        return reply

    def _next_batch(self, iterator: Iterator[Any], wanted: int) -> Any:
        items = []
        for _ in range(max(1, min(wanted, MAX_BATCH))):
            try:
                items.append(next(iterator))
            except StopIteration:
                return {"items": self.encode(items), "done": True}
        return {"items": self.encode(items), "done": False}

    def _release(self, handles: list[Any]) -> None:
        for handle in handles:
            obj = self.objects.pop(handle, None) if type(handle) is int else None
            if obj is not None:
                self.handles.pop(id(obj), None)
                self.described.discard(handle)

    # -- what goes back with each reply --------------------------------------------------------

    def output(self, stream: str, text: str) -> None:
        if self.output_size >= MAX_OUTPUT:
            return
        text = text[: MAX_OUTPUT - self.output_size]
        self.output_size += len(text)
        self.pending_output.append([stream, text])

    def found(self, message: dict[str, Any]) -> None:
        if message.get("type") == wire.FINDING:  # not its answers, which only a test's end asks
            self.pending_findings.append([str(message["code"]), str(message["detail"])])

    def flush_output(self) -> None:
        for finding in self.pending_findings:
            self.endpoint.send({"fnd": finding})
        self.pending_findings.clear()
        for stream, text in self.pending_output:
            self.endpoint.send({"o": stream, "s": text})
        self.pending_output.clear()
        self.output_size = 0

    def encode_error(self, exc: BaseException) -> dict[str, Any]:
        kind = type(exc)
        try:
            args = self.encode(list(exc.args))
        except Exception:
            args = [repr(a)[:500] for a in exc.args]
        error: dict[str, Any] = {
            "type": kind.__qualname__,
            "mod": str(kind.__module__),
            "msg": _safe_str(exc)[:4000],
            "args": args,
            "tb": _candidate_traceback(exc)[-4000:],
        }
        if kind.__module__ != "builtins" and not _is_stdlib(kind.__module__):
            error["cls"] = self.ref(kind)
        return error


class TheirObject:
    """Stands in, here, for an object of the test process (a ``key=`` function, a file the
    test passed): the test process lets the candidate call it, iterate it and read its public
    attributes, nothing more."""

    __slots__ = ("_sw_id", "_sw_kind", "_sw_server")

    def __init__(self, server: CandidateServer, ident: int, kind: str) -> None:
        self._sw_server, self._sw_id, self._sw_kind = server, ident, kind

    def _sw_ask(self, op: str, *args: Any, **fields: Any) -> Any:
        server = self._sw_server
        request = {"op": op, "target": {"ref": {"w": self._sw_id}}, **fields}
        if args:
            request["args"] = server.encode(list(args))
        try:
            return server.decode(server.endpoint.call(request))
        except RemoteError as exc:  # the test's object raised: as a builtin exception here
            raise _builtin_exception(exc.error) from None

    def __enter__(self) -> Any:
        return self._sw_ask("enter")

    def __exit__(self, *exc: object) -> bool:
        return bool(self._sw_ask("exit"))

    def __call__(self, /, *args: Any, **kwargs: Any) -> Any:
        server = self._sw_server
        return self._sw_ask(
            "call", *(), args=server.encode(list(args)), kwargs=server.encode(kwargs)
        )

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return self._sw_ask("getattr", name=name)

    def __iter__(self) -> Any:
        return self._sw_ask("iter")

    def __next__(self) -> Any:
        return self._sw_ask("next")

    def __len__(self) -> int:
        return int(self._sw_ask("len"))

    def __getitem__(self, key: Any) -> Any:
        return self._sw_ask("getitem", key)

    def __contains__(self, item: Any) -> bool:
        return bool(self._sw_ask("contains", item))

    def __setitem__(self, key: Any, value: Any) -> None:
        self._sw_ask("setitem", key, value)

    def __delitem__(self, key: Any) -> None:
        self._sw_ask("delitem", key)

    def __repr__(self) -> str:
        return str(self._sw_ask("repr"))


def null_call(*args: Any, **kwargs: Any) -> None:
    """What the benchmark fixture calls between its rounds, with a round's arguments: the
    cost of a call here, less any work (child/test_process/proxy.py ``NULL_CALL``)."""
    del args, kwargs


def serve_forever(endpoint: Endpoint, server: CandidateServer) -> None:
    """Answer requests until the test process goes away."""
    while True:
        try:
            message = endpoint.receive()
        except Exception:  # the channel closed: the run is over, or the test process died
            return
        endpoint.dispatch(message)


def start(
    sock: Any,
    extra_path: tuple[str, ...],
    watch: MonitorPaths | None = None,
    modules: tuple[str, ...] = (),
    coverage: bool = False,
) -> None:
    """Run as the candidate's process: its streams forwarded, its directory importable, and
    the monitor armed (its findings go to the test process, which passes them on: evidence
    the candidate could silence, never a pass it could forge); with ``coverage``, the lines
    of its files that run are measured from before its first import."""
    endpoint = Endpoint(
        sock, serve=lambda m: None, encode_error=lambda e: {}, catch=(BaseException,)
    )
    server = CandidateServer(endpoint)
    endpoint.serve = server.serve
    endpoint.encode_error = server.encode_error
    original_reply = endpoint.reply

    def reply(message: dict[str, Any]) -> None:
        server.flush_output()
        if server.warnings:
            message["warn"] = server.warnings
            server.warnings = []
        original_reply(message)

    endpoint.reply = reply  # type: ignore[method-assign]
    monitor = None
    if watch is not None:
        monitor = arm(
            -1, watch.candidate_dir, watch.tests_dir, watch.writable, _test_process_identities()
        )
        monitor._send = lambda _, message: server.found(message)
        server.monitor = monitor
    # A crash here prints where the candidate was (the run's output keeps it), as pytest's
    # faulthandler does for a crash in the test process.
    faulthandler.enable(file=sys.__stderr__ or sys.stderr, all_threads=False)
    sys.stdout = _Forward(server, "out")
    sys.stderr = _Forward(server, "err")
    # Appended, not prepended, as in a run of the tests with the candidate in process: the
    # candidate can add modules but never shadow the standard library or pytest.
    sys.path.extend(extra_path)
    if modules:  # the modules the tests import it under: its own, not an installed copy
        prefer_candidate(modules, extra_path)
    if coverage and watch is not None:
        measuring = coverage_probe.start(watch.candidate_dir)
        if measuring is not None:
            server.coverage = (measuring, watch.candidate_dir)
    serve_forever(endpoint, server)


# -- helpers ---------------------------------------------------------------------------------


def _identity(obj: Any, depth: int = 0) -> Any:
    """What an object compares by, as plain data, where its equality is the standard
    library's: an Enum member (its class and value), an instance of a dataclass whose
    ``__eq__`` dataclasses generated (its class and fields, each plain data or such an
    identity). The test process compares two of these by it, never by the class's
    ``__eq__`` (child/test_process/proxy.py). None for anything else."""
    kind = type(obj)
    mro: tuple[type, ...] = type.__dict__["__mro__"].__get__(kind)
    enum = sys.modules.get("enum")
    if enum is not None and any(cls is enum.Enum for cls in mro):
        value = _field(object.__getattribute__(obj, "_value_"), depth)
        name = ["enum", str(kind.__module__), str(kind.__qualname__)]
        return None if value is None else [*name, value]
    owner = next((cls for cls in mro if "__eq__" in vars(cls)), None)
    params = vars(owner).get("__dataclass_params__") if owner is not None else None
    fields = vars(owner).get("__dataclass_fields__") if owner is not None else None
    equal = vars(owner).get("__eq__") if owner is not None else None
    code = getattr(equal, "__code__", None)
    if (
        owner is None
        or not getattr(params, "eq", False)
        or not isinstance(fields, dict)
        or getattr(code, "co_filename", None) != "<string>"  # generated, not written
    ):
        return None
    found = []
    field_kind = getattr(sys.modules.get("dataclasses"), "_FIELD", None)
    for name, spec in list(fields.items())[:64]:
        # What the generated __eq__ compares: fields proper (not ClassVar, InitVar), compare=True
        if getattr(spec, "_field_type", None) is not field_kind or not spec.compare:
            continue
        value = _field(object.__getattribute__(obj, name), depth)
        if value is None:
            return None
        found.append(value)
    return ["dc", str(kind.__module__), str(kind.__qualname__), found]


def _field(value: Any, depth: int) -> Any:
    """A field's value as ``{"v": plain}`` or its identity; None where it has neither."""
    try:
        return {"v": values.plain(value, budget=[500, 16384])}
    except (values.NotPlainData, values.TooLarge, RecursionError):
        pass
    return _identity(value, depth + 1) if depth < 20 else None


def _kind(obj: Any) -> str:
    if isinstance(obj, type):
        return "cls"
    if isinstance(obj, types.ModuleType):
        return "mod"
    if isinstance(obj, (types.GeneratorType, types.AsyncGeneratorType)) or (
        hasattr(type(obj), "__next__") and hasattr(type(obj), "__iter__")
    ):
        return "it"
    if callable(obj) and isinstance(
        obj, (types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.LambdaType)
    ):
        return "fn"
    return "obj"


def _path_of(obj: Any) -> list[str] | None:
    """(module, qualified name) by which ``obj`` can be found again, if it can."""
    if isinstance(obj, types.ModuleType):
        return [obj.__name__, ""]
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qualname, str) or "<" in qualname:
        return None
    try:
        found = _resolve(module, qualname)
    except Exception:
        return None
    return [module, qualname] if found is obj else None


def _resolve(module: str, qualname: str) -> Any:
    obj: Any = importlib.import_module(module)
    for part in filter(None, qualname.split(".")):
        obj = getattr(obj, part)
    return obj


def _is_stdlib(module: str) -> bool:
    return module.split(".")[0] in sys.stdlib_module_names


def _describe_warning_class(category: type, server: CandidateServer) -> Any:
    if category.__module__ == "builtins":
        return {"builtin": category.__name__}
    return {"ref": server.ref(category)}


#: This package's files (child/apart/candidate.py is three levels down): never shown.
_OURS = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep


def _candidate_traceback(exc: BaseException) -> str:
    """Where in the candidate's code it raised: the last frames, without our own."""
    frames = [
        f
        for f in traceback.extract_tb(exc.__traceback__)
        if not f.filename.startswith((_OURS, "<frozen "))
    ]
    return "".join(traceback.format_list(frames[-8:]))


def _builtin_exception(error: dict[str, Any]) -> Exception:
    """What the test process's object raised, as the builtin exception of the same name
    (``Exception`` for any other), with its message."""
    found = getattr(builtins, str(error.get("type", "")), None)
    kind = found if isinstance(found, type) and issubclass(found, Exception) else Exception
    return kind(str(error.get("msg", "")))


def _safe_str(exc: BaseException) -> str:
    with contextlib.suppress(Exception):
        return str(exc)
    return f"<{type(exc).__name__}: str() failed>"


def _test_process_identities() -> tuple[tuple[str, str, str], ...]:
    """The test process's probes (the benchmark fixture's clock, the reporter...), loaded
    here by name only to be watched: they do nothing in this process, so a candidate that
    patches them here shows what it aims at, and its monitor reports it as the test
    process's would. Nothing of them is used here (the layout test keeps it that way)."""
    names = importlib.import_module("pytest_scorewright.child.test_process.identities")
    found: tuple[tuple[str, str, str], ...] = names.test_process_identities()
    return found
