"""The test process's side of the candidate: proxy modules that forward to its own process.

With ``isolation="process"`` the trusted tests run in a process that never imports candidate
code. An import hook answers for the candidate's module names with :class:`ProxyModule`s;
every attribute, call and operation on them is a request to the candidate's process
(child/apart/candidate.py), and what comes back is decoded into fresh builtin values
(protocol/values.py) or into stand-ins that can only ask the candidate to act. So:

- a result is a fresh ``list``/``int``/``dict``...: it has no behaviour of the candidate's;
- an object that is not plain data stays in the candidate's process; its stand-in forwards
  attribute access, calls and operators, but compares equal only to another stand-in (never to
  a plain value), so an always-equal object, a lazy result or ``unittest.mock.ANY`` from the
  candidate equals nothing the test expects;
- an exception raised by the candidate is raised here as a builtin or standard-library
  exception of the same type, or as a stand-in class for the candidate's own exception
  classes (``pytest.raises(solution.ParseError)`` works); an escape (``SystemExit``,
  ``KeyboardInterrupt``, pytest's skip) never leaves the candidate's process as one;
- a list, dict, set or bytearray argument the candidate changed in place is changed here too;
- a function the test passes (``key=``) is called back here when the candidate calls it; the
  candidate may call, iterate and read public attributes of what the test passes, nothing else;
- what the candidate prints comes back with each reply, so ``capsys`` sees it; its warnings are
  warned again here, so ``pytest.warns`` sees them.

What cannot cross is documented in docs/isolation.md.
"""

from __future__ import annotations

import builtins
import contextlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import itertools
import os
import re
import signal
import socket
import sys
import threading
import time
import types
import warnings
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from pytest_scorewright.child.test_process.stand_ins import (
    CandidateError,
    NotCrossable,
    Ref,
    RemoteFunction,
    RemoteIterator,
    RemoteObject,
    StandIn,
    identity_from,
    local_exception_class,
    send_call,
    stand_in_class,
)
from pytest_scorewright.protocol import values
from pytest_scorewright.protocol.rpc import ChannelClosed, Endpoint, RemoteError, socket_from_fd

#: Crashes (and calls abandoned: a test's timeout) after which the test process stops asking
#: for a new candidate process.
MAX_RESTARTS = 30
#: Null calls timed as each candidate process starts, before it imports any candidate code:
#: the benchmark fixture (child/test_process/bench.py) never subtracts more than their fastest.
CALIBRATION_TRIPS = 10
#: Items of the calibration call that times what an item of arguments or results costs.
CALIBRATION_ITEMS = 2000
#: A function of ours in the candidate's process that does nothing: a call of it costs what
#: any call there costs (both ends' encoding, the channel, the server's dispatch), less the
#: work, so the benchmark fixture subtracts it from each call it times.
NULL_CALL = ("pytest_scorewright.child.apart.candidate", "null_call")
#: Bound at import, before any candidate code (the test process never imports it anyway).
_clock = time.perf_counter
#: The session install() made, for the benchmark fixture.
_current: Session | None = None


class CandidateUnavailable(Exception):
    """The candidate's process ended (it crashed, or was killed), or cannot be reached."""


class Session:
    """The test process's link to the candidate's process, which it asks the run's spawner
    for (again after a crash, up to :data:`MAX_RESTARTS` times)."""

    def __init__(
        self,
        spawner: socket.socket,
        report: Callable[[str, str], None] | None = None,
        *,
        benchmarks: bool = True,
    ) -> None:
        self.spawner = spawner
        self.benchmarks = benchmarks
        #: Evidence for the parent (the test process's monitor): the candidate's own
        #: monitor's findings, and escapes it raised.
        self.report = report
        self.endpoint: Endpoint | None = None
        self.incarnation = 0
        self.ended: str | None = None
        self.theirs: dict[int, Any] = {}  # our objects the candidate may refer to
        self.their_ids: dict[int, int] = {}  # id(obj) -> their reference
        self.next_id = itertools.count(1)
        self.stand_ins: weakref.WeakValueDictionary[tuple[int, int], Any] = (
            weakref.WeakValueDictionary()
        )
        self.classes: dict[tuple[int, int], type] = {}
        self.classes_by_path: dict[tuple[str, str], type] = {}
        self.released: list[int] = []
        self.lock = threading.RLock()
        #: Requests sent so far (each a round trip); the benchmark fixture counts them.
        self.requests = 0
        #: References decoded so far: a value whose decoding made none holds no stand-in.
        self.derefs = 0
        #: The fastest null call to the current candidate process, timed before it had
        #: imported any candidate code: the most the benchmark fixture subtracts for a call.
        self.trusted_trip: float | None = None
        #: What one item (of a call's arguments or result) adds to a call at least, timed
        #: with :attr:`trusted_trip` where the suite ``benchmarks``: ~1.5 ms of CPU a
        #: candidate process, and None (no item's cost subtracted) elsewhere.
        self.trusted_item: float | None = None
        #: Where the candidate was when a test last timed out in a call to it.
        self.stuck_at: str | None = None
        #: The pid of the candidate's process, read as it starts: the test clock's watcher
        #: reads it without taking the lock a call holds (child/test_process/test_clock.py).
        self.pid: int | None = None
        #: :data:`NULL_CALL`'s stand-in, reached by its path in every incarnation.
        self.null_function = RemoteFunction(Ref(self, 0, -1, NULL_CALL), NULL_CALL[1], NULL_CALL[1])

    # -- the link -----------------------------------------------------------------------------

    def connect(self) -> Endpoint:
        if self.endpoint is not None and self.endpoint.closed is None:
            return self.endpoint
        if self.endpoint is not None:
            self.ended = self.endpoint.closed
        if self.incarnation > MAX_RESTARTS:
            raise CandidateUnavailable(
                f"the candidate's process ended {self.incarnation} times; not restarted again"
            )
        try:
            with _uninterrupted():
                self.spawner.sendall(b"s")
                _, fds, _, _ = socket.recv_fds(self.spawner, 1, 1)
        except OSError as exc:
            raise CandidateUnavailable(f"no candidate process could be started: {exc}") from None
        if not fds:
            raise CandidateUnavailable("no candidate process could be started")
        self.incarnation += 1
        self.released.clear()
        self.endpoint = Endpoint(
            socket_from_fd(fds[0]),
            serve=self.serve,
            encode_error=self.encode_error,
            on_output=_write_output,
            on_reply=_rewarn_from(self),
            on_finding=self._relay,
        )
        self.pid = self.candidate_pid()
        self.trusted_trip = self.trusted_item = None
        trips = [self.null_call() for _ in range(CALIBRATION_TRIPS)]
        timed = [t for t in trips if t is not None]
        self.trusted_trip = min(timed) if timed else None
        if not self.benchmarks:
            return self.endpoint
        # What one item of a call's arguments or result adds to its crossing, timed here too,
        # before any candidate code: a call of 1,200 numbers each way spends about a
        # millisecond crossing, which is not the candidate's work (child/test_process/bench.py).
        payload = (list(range(CALIBRATION_ITEMS)),)
        loaded = [t for t in (self.null_call(payload) for _ in range(5)) if t is not None]
        if loaded and self.trusted_trip is not None:
            extra = max(0.0, min(loaded) - self.trusted_trip)
            self.trusted_item = extra / CALIBRATION_ITEMS
        return self.endpoint

    def null_call(
        self, args: Sequence[Any] = (), kwargs: dict[str, Any] | None = None
    ) -> float | None:
        """The seconds one call of :data:`NULL_CALL` with these arguments takes, on the path
        every call of a candidate function takes; None if it failed. Not counted as a
        request: the benchmark fixture times these between its rounds."""
        with self.lock:  # a turn like any request: a test's threads share the channel
            counted = self.requests
            target = self.null_function
            try:
                # A call's path, but what it says it changed in the arguments is not applied:
                # this call is ours, between the test's rounds.
                started = _clock()
                self.decode(send_call(self, target, "call", None, args, kwargs or {})["value"])
                return _clock() - started
            except Exception:
                return None
            finally:
                self.requests = counted

    def round_trips(self) -> int:
        """Requests sent so far, each one round trip (the benchmark fixture's counter)."""
        return self.requests

    def note_not_plain(self, theirs: str, ours: str) -> None:
        if self.report is not None:
            test = os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0] or "a test"
            self.report(
                "assertion_not_plain",
                f"{test} compared the candidate's {theirs[:60]} object with a plain {ours[:40]}",
            )

    def note_handle(self, code: str, what: str) -> None:
        """Evidence the parent sets against what the reference did in the same test: the
        candidate returned an object of its own (``returned_handle``), or one of its objects
        was handed a test's value (``handle_given_value``), which tells it the value."""
        if self.report is not None:
            test = os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0] or "a test"
            self.report(code, f"{test}: {what[:120]}")

    def check(self) -> None:
        """At a test's end: the candidate's process checks what it replaced there (if there is
        one, and it is not gone)."""
        if self.endpoint is not None and self.endpoint.closed is None:
            with contextlib.suppress(Exception):
                self.request("check")

    def candidate_pid(self) -> int | None:
        """The pid of the candidate's process now, as the spawner that forked it says; None
        if there is none."""
        with self.lock:
            if self.endpoint is None or self.endpoint.closed is not None:
                return None
            try:
                with _uninterrupted():
                    self.spawner.sendall(b"p")
                    pid = int.from_bytes(_recv_exactly(self.spawner, 4), "big")
            except (OSError, ValueError):
                return None
            return pid or None

    def coverage(self) -> tuple[list[str], list[str]]:
        """At the session's end: the candidate's process's claim of the lines of its files
        that ran (child/shared/coverage_probe.py), as strings only; nothing if it never started, is
        gone, or answers anything else."""
        if self.endpoint is None or self.endpoint.closed is not None:
            return [], []
        try:
            answer = self.request("coverage")
        except Exception:
            return [], []
        files = answer.get("files") if type(answer) is dict else None
        lines = answer.get("lines") if type(answer) is dict else None
        if type(files) is not list or type(lines) is not list or len(files) != len(lines):
            return [], []
        pairs = [
            (f, n) for f, n in zip(files, lines, strict=True) if type(f) is str and type(n) is str
        ]
        return [f for f, _ in pairs], [n for _, n in pairs]

    def _where_stuck(self) -> str | None:
        """The candidate's own innermost frame, as ``file:line in function``, asked of the
        spawner (which has the candidate's process write its stack); None if it cannot say."""
        try:
            with _uninterrupted():
                self.spawner.sendall(b"w")
                size = int.from_bytes(_recv_exactly(self.spawner, 2), "big")
                dump = _recv_exactly(self.spawner, size).decode("utf-8", "replace")
        except (OSError, ValueError):
            return None
        return innermost_candidate_frame(dump)

    def _why_it_ended(self) -> None:
        """Ask the spawner how the candidate's process ended in the middle of a call: a crash
        (a signal: SIGSEGV, a limit) is an honest failure; an exit is os._exit or the like,
        the exit-with-success trick of a test process, which wins nothing here either."""
        try:
            with _uninterrupted():
                self.spawner.sendall(b"?")
                how = self.spawner.recv(60).decode("ascii", "replace").strip()
        except OSError:
            return
        if how.startswith("exit") or how == "alive":
            test = os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0] or "collection"
            what = "closed its end of the channel" if how == "alive" else f"exited ({how})"
            if self.report is not None:
                self.report("early_exit", f"the candidate's process {what} during a call in {test}")

    def _relay(self, code: str, detail: str) -> None:
        # Only the code crosses from the candidate's process: its text could say anything
        # (the held-out inputs it saw, a note to the next program), and the detail reaches
        # people and the loop's LLM. The parent knows what each code means.
        del detail
        if self.report is not None:
            self.report(code, "reported by the candidate's process's monitor")

    def request(self, op: str, target: Any = None, *, raw: bool = False, **fields: Any) -> Any:
        """Ask the candidate's process; the decoded answer (``raw``: the answer as it came, for
        the caller to decode), or its exception raised here. One request at a time: threads
        of the tests take turns (a callback the candidate makes meanwhile is served by the
        thread that waits, so the lock is re-entrant)."""
        __tracebackhide__ = True
        with self.lock:
            return self._request(op, target, raw=raw, **fields)

    def _request(self, op: str, target: Any, *, raw: bool, **fields: Any) -> Any:
        __tracebackhide__ = True
        endpoint = self.connect()
        self.requests += 1
        message: dict[str, Any] = {"op": op, **fields}
        if target is not None:
            message["target"] = self.encode(target)
        if self.released:
            message["rel"], self.released = self.released, []
        try:
            answer = endpoint.call(message)
        except ChannelClosed as exc:
            if exc.forged and self.report is not None:
                self.report("forged_message", f"something wrote to the call channel: {exc}")
            else:
                self._why_it_ended()
            raise CandidateUnavailable(
                f"the candidate's process ended during this call ({exc})"
            ) from None
        except RemoteError as exc:
            raise self.exception(exc.error) from None
        except BaseException as exc:
            # pytest-timeout's Failed (an outcome, not an Exception), raised here while the
            # candidate worked: where it was is what the timeout's message should say.
            if type(exc).__name__ == "Failed" and "Timeout" in str(exc):
                self.stuck_at = self._where_stuck()
            raise
        try:
            return answer if raw else self.decode(answer)
        except values.NotPlainData as exc:
            raise CandidateError(
                f"the candidate's process answered with malformed data: {exc}"
            ) from None

    # -- values both ways ---------------------------------------------------------------------

    def encode(self, value: Any) -> Any:
        try:
            return values.encode(value, self._ref)
        except RecursionError:
            raise NotCrossable("a value nested too deeply to pass to the candidate") from None

    def decode(self, data: Any) -> Any:
        return values.decode(data, self.deref)

    def _ref(self, obj: Any) -> dict[str, Any]:
        ref: Ref | None = None
        if isinstance(obj, StandIn):
            ref = obj.__dict__["_sw_ref"]
        elif isinstance(obj, type) and isinstance(vars(obj).get("_sw_class_ref"), Ref):
            ref = vars(obj)["_sw_class_ref"]
        if ref is not None:
            if ref.incarnation == self.incarnation:
                return {"h": ref.handle}
            if ref.path is not None:
                return {"path": list(ref.path)}
            raise CandidateUnavailable("this object belonged to a candidate process that has ended")
        if isinstance(obj, types.ModuleType):
            if isinstance(obj, ProxyModule):
                return {"path": [obj.__name__, ""]}
            raise NotCrossable(f"the module {obj.__name__} cannot be passed to the candidate")
        key = id(obj)
        ident = self.their_ids.get(key)
        if ident is None:
            ident = next(self.next_id)
            self.their_ids[key] = ident
            self.theirs[ident] = obj
        return {"w": ident, "k": "fn" if callable(obj) else "obj"}

    def deref(self, form: Any) -> Any:
        self.derefs += 1
        if type(form) is not dict:
            raise values.NotPlainData("a reference that is not an object")
        if "w" in form:
            obj = self.theirs.get(form["w"]) if type(form["w"]) is int else None
            if obj is None:
                raise values.NotPlainData("a reference to an object of ours that we never gave")
            return obj
        handle, kind, info = form.get("h"), form.get("k"), form.get("i", {})
        if type(handle) is not int or kind not in _KINDS or type(info) is not dict:
            raise values.NotPlainData("a malformed reference")
        path = info.get("path")
        ref = Ref(self, handle, self.incarnation, _path(path))
        if kind == "cls":
            return self._class(ref, info)
        key = (self.incarnation, handle)
        known = self.stand_ins.get(key)
        if known is not None:
            return known
        if kind == "mod":
            name = info.get("name")
            found = sys.modules.get(name) if type(name) is str else None
            if isinstance(found, ProxyModule):
                return found
            raise values.NotPlainData("a reference to a module the tests did not import")
        if kind == "fn":
            made: Any = RemoteFunction(
                ref, str(info.get("name", "")), str(info.get("qualname", ""))
            )
        elif kind == "it":
            made = RemoteIterator(ref)
        else:
            cls = self.deref(info.get("cls")) if info.get("cls") is not None else RemoteObject
            if not (isinstance(cls, type) and issubclass(cls, RemoteObject)):
                cls = RemoteObject
            made = object.__new__(cls)
            made.__dict__["_sw_ref"] = ref
            identity = identity_from(info.get("id")) if "id" in info else None
            if identity is not None:
                made.__dict__["_sw_identity"] = identity
        self.stand_ins[key] = made
        weakref.finalize(made, self._release, self.incarnation, handle)
        return made

    def _release(self, incarnation: int, handle: int) -> None:
        if incarnation == self.incarnation:
            self.released.append(handle)

    def _class(self, ref: Ref, info: dict[str, Any]) -> type:
        key = (self.incarnation, ref.handle)
        known = self.classes.get(key)
        if known is None and ref.path is not None:
            known = self.classes_by_path.get(ref.path)
        if known is not None:
            if vars(known)["_sw_class_ref"].incarnation != self.incarnation:
                type.__setattr__(known, "_sw_class_ref", ref)  # found again after a crash
            self.classes[key] = known
            return known
        made = stand_in_class(self, ref, info)
        self.classes[key] = made
        if ref.path is not None:
            self.classes_by_path[ref.path] = made
        return made

    # -- what the candidate may do with our objects --------------------------------------------

    def serve(self, request: dict[str, Any]) -> Any:
        op = request.get("op")
        target = self.decode(request.get("target"))
        args = self.decode(request.get("args", []))
        if type(args) is not list:
            raise TypeError("malformed arguments")
        if op == "call" and callable(target):
            kwargs = self.decode(request.get("kwargs", {"d": []}))
            if type(kwargs) is not dict or not all(type(k) is str for k in kwargs):
                raise TypeError("malformed keyword arguments")
            return self.encode(target(*args, **kwargs))
        if op == "getattr":
            name = request.get("name")
            if type(name) is not str or name.startswith("_"):
                raise AttributeError("only public attributes of the tests' objects are readable")
            return self.encode(getattr(target, name))
        simple = _THEIR_OPERATIONS.get(str(op))
        if simple is None:
            raise TypeError(f"the candidate may not {str(op)[:40]!r} an object of the tests")
        return self.encode(simple(target, *args))

    def encode_error(self, exc: BaseException) -> dict[str, Any]:
        kind = type(exc)
        return {
            "type": kind.__qualname__ if kind.__module__ == "builtins" else "Exception",
            "mod": "builtins",
            "msg": str(exc)[:4000],
            "args": [str(exc)[:4000]],
        }

    # -- exceptions the candidate raised ------------------------------------------------------

    def exception(self, error: dict[str, Any]) -> BaseException:
        """The candidate's exception, as an exception of this process."""
        message = str(error.get("msg", ""))[:4000]
        module, name = str(error.get("mod", "")), str(error.get("type", ""))
        if name in _ESCAPES and self.report is not None:
            test = os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0] or "a test"
            self.report("skip_from_candidate", f"the candidate raised {name} inside {test}")
        cls: type[BaseException] | None = None
        if error.get("cls") is not None:
            with contextlib.suppress(values.NotPlainData, CandidateUnavailable):
                found = self.deref(error["cls"])
                if isinstance(found, type) and issubclass(found, BaseException):
                    cls = found
        if cls is None:
            cls = local_exception_class(module, name)
        try:
            args = self.decode(error.get("args", []))
        except values.NotPlainData:
            args = [message]
        if type(args) is not list:
            args = [message]
        if cls is None:
            shown = name if module == "builtins" else f"{module}.{name}"
            exc: BaseException = CandidateError(
                f"the candidate raised {shown}, which is not raised here as itself: {message}"
            )
        else:
            exc = cls.__new__(cls)
            exc.args = tuple(args)
            if module == "builtins" or cls.__module__ == module:
                # A builtin's own __init__ sets what it prints from (SyntaxError's msg, line and
                # text; OSError's errno): without it a syntax error reads "None".
                with contextlib.suppress(Exception):
                    cls.__init__(exc, *args)
        tb = error.get("tb")
        if type(tb) is str and tb and hasattr(exc, "add_note"):
            exc.add_note("raised in the candidate's process at:\n" + tb[-2000:])
        return exc


def _recv_exactly(sock: socket.socket, size: int) -> bytes:
    got = b""
    while len(got) < size:
        chunk = sock.recv(size - len(got))
        if not chunk:
            raise OSError("the spawner closed the socket")
        got += chunk
    return got


_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+) in (\S+)', re.MULTILINE)


def innermost_candidate_frame(dump: str) -> str | None:
    """From faulthandler's dump (most recent call first), the first frame outside this
    package and the standard library, as ``file:line in function`` (the file relative to
    the candidate's directory where the path shows it)."""
    stdlib = os.path.dirname(os.__file__) + "/"
    for path, line, function in _FRAME.findall(dump):
        if "/pytest_scorewright/" in path or path.startswith(stdlib) or path.startswith("<"):
            continue
        shown = path.split("/candidate/", 1)[1] if "/candidate/" in path else path
        return f"{shown[-120:]}:{line} in {function[:80]}"
    return None


def _path(path: Any) -> tuple[str, str] | None:
    if type(path) is list and len(path) == 2 and all(type(p) is str for p in path):
        return (path[0], path[1])
    return None


_KINDS = frozenset({"fn", "cls", "obj", "mod", "it"})
#: A proxy module's attributes that belong to the import system, never asked of the candidate
#: (``__version__``, ``__all__``, ``__doc__`` and the like are the candidate's).
_IMPORT_MACHINERY = frozenset(
    {
        "__path__",
        "__spec__",
        "__loader__",
        "__file__",
        "__cached__",
        "__package__",
        "__builtins__",
        "__getattr__",
        "__dir__",
        "__wrapped__",
        "__class__",
        "__dict__",
        "__origin__",
        "__mro_entries__",
    }
)
#: What ends a test without failing it, or the session: from the candidate, gaming.
_ESCAPES = frozenset({"Skipped", "XFailed", "SkipTest", "Exit", "KeyboardInterrupt"})

#: What the candidate may do with an object the tests passed it, beyond calling it and
#: reading its public attributes (a lock it may hold: enter and exit, told of no exception).
_THEIR_OPERATIONS: dict[str, Any] = {
    "iter": iter,
    "next": next,
    "len": len,
    "getitem": lambda o, k: o[k],
    "contains": lambda o, x: x in o,
    "repr": repr,
    "setitem": lambda o, k, v: o.__setitem__(k, v),
    "delitem": lambda o, k: o.__delitem__(k),
    "enter": lambda o: o.__enter__(),
    "exit": lambda o: o.__exit__(None, None, None),
}


def _write_output(stream: str, text: str) -> None:
    # A lone surrogate the candidate printed would stop this process's own writes with
    # UnicodeEncodeError: it is written as \\udcNN instead (capsys sees the same).
    if not text.isascii():
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    (sys.stderr if stream == "err" else sys.stdout).write(text)


def _rewarn_from(session: Session) -> Any:
    def rewarn(message: dict[str, Any]) -> None:
        found = message.get("warn")
        if type(found) is not list:
            return
        for entry in found[:100]:
            if type(entry) is not list or len(entry) != 4:
                continue
            category, text, filename, lineno = entry
            cls = _warning_class(session, category)
            with contextlib.suppress(Exception):
                warnings.warn_explicit(
                    str(text), cls, str(filename), int(lineno) if type(lineno) is int else 0
                )

    return rewarn


def _warning_class(session: Session, described: Any) -> type[Warning]:
    found: Any = None
    if type(described) is dict and "builtin" in described:
        found = getattr(builtins, str(described["builtin"]), None)
    elif type(described) is dict and "ref" in described:
        with contextlib.suppress(values.NotPlainData, CandidateUnavailable):
            found = session.deref(described["ref"])
    return found if isinstance(found, type) and issubclass(found, Warning) else UserWarning


# -- the import hook --------------------------------------------------------------------------


class ProxyModule(types.ModuleType):
    """A module of the candidate's, as the tests import it."""

    _sw_session: Session

    def __getattr__(self, name: str) -> Any:
        if name in _IMPORT_MACHINERY:  # the import system's own: never the candidate's
            raise AttributeError(name)
        session = self.__dict__["_sw_session"]
        value = session.request("getattr", self, name=name)
        if isinstance(value, (RemoteFunction, type)):
            self.__dict__[name] = value  # the same object on every access, as in process
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        if not name.startswith("__"):
            session = self.__dict__["_sw_session"]
            session.request("setattr", self, name=name, value=session.encode(value))
        super().__setattr__(name, value)

    def __delattr__(self, name: str) -> None:
        session = self.__dict__["_sw_session"]
        session.request("delattr", self, name=name)
        with contextlib.suppress(AttributeError):
            super().__delattr__(name)


class ProxyFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Answers imports of the candidate's top-level names (and below them) with proxies."""

    def __init__(
        self, session: Session, names: Sequence[str], locations: Sequence[str] = ()
    ) -> None:
        self.session = session
        self.names = frozenset(names)
        #: The candidate's directories (as this run sees them), where a module's file is.
        self.locations = tuple(locations)

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname.split(".")[0] not in self.names:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = ProxyModule(spec.name)
        module.__dict__["_sw_session"] = self.session
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        __tracebackhide__ = True  # the candidate's error is the story, not our frames
        try:
            self.session.request("import", module=module.__name__)
        except CandidateUnavailable:
            raise
        except (Exception, SystemExit) as exc:  # the candidate's, raised here: an import error
            if isinstance(exc, ModuleNotFoundError) and repr(module.__name__) in str(exc):
                # No such submodule: `from mod import missing` then says "cannot import name".
                raise ModuleNotFoundError(str(exc), name=module.__name__) from None
            raise ImportError(_import_failure(exc), name=module.__name__) from exc
        module.__dict__["__path__"] = []  # a package: submodules come through this finder too
        where = source_file(module.__name__, self.locations)
        if where is not None:
            # Where the module's source is, found here by name and never asked of the
            # candidate: suites that read data files beside a module (os.path.dirname of
            # __file__) work apart as they do in process.
            module.__dict__["__file__"] = where


def _import_failure(exc: BaseException) -> str:
    """What an LLM needs to fix an import that failed: a syntax error with its file, line,
    source line and caret; anything else with the line of the candidate's code it came from."""
    if isinstance(exc, SyntaxError):
        name = os.path.basename(exc.filename or "?")
        where = f"{name}, line {exc.lineno}" + (f", column {exc.offset}" if exc.offset else "")
        text = f"{type(exc).__name__}: {exc.msg} ({where})"
        if exc.text:
            source = exc.text.rstrip("\n")
            caret = " " * max(0, (exc.offset or 1) - 1 - (len(source) - len(source.lstrip())))
            text += f"\n    {source.strip()}\n    {caret}^"
        return text
    text = f"{type(exc).__name__}: {exc}"
    notes = getattr(exc, "__notes__", None) or []
    lines = [line.strip() for note in notes for line in str(note).splitlines()]
    frames = [line for line in lines if line.startswith("File ")]
    return f"{text} ({frames[-1]})" if frames else text


def source_file(name: str, locations: Sequence[str]) -> str | None:
    """The file module ``name`` is imported from in the first of ``locations`` that has it
    (``a/b.py`` or ``a/b/__init__.py``, as the path finder looks), or None (a namespace
    package, or nothing there)."""
    parts = name.split(".")
    for root in locations:
        base = os.path.join(root, *parts)
        for path in (f"{base}.py", os.path.join(base, "__init__.py")):
            if os.path.isfile(path):
                return path
    return None


@contextlib.contextmanager
def _uninterrupted() -> Iterator[None]:
    """The per-test limits' signals held back (SIGALRM, pytest-timeout's; SIGPROF, the test
    clock's) while the test process talks with the spawner: a timeout raised between a
    question and its answer would leave the answer to be read as the next one's, and every
    later candidate process unreachable. A signal that comes meanwhile is handed to its own
    handler as the exchange ends (a mask would not do: the kernel hands a process's signal to
    another thread, and Python runs the handler in this one all the same)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held = (signal.SIGALRM, signal.SIGPROF)
    came: list[tuple[int, types.FrameType | None]] = []
    before = {n: signal.signal(n, lambda n, frame: came.append((n, frame))) for n in held}
    try:
        yield
    finally:
        for number, handler in before.items():
            signal.signal(number, handler)
        for signum, frame in came:
            handler = before[signal.Signals(signum)]
            if callable(handler):
                handler(signum, frame)


def install(
    spawner_fd: int,
    names: Sequence[str],
    report: Callable[[str, str], None] | None = None,
    own: Sequence[str] = (),
    locations: Sequence[str] = (),
    benchmarks: bool = True,
) -> Session:
    """Answer imports of ``names`` with proxies to a candidate process the spawner starts.
    Names the test process can import itself (the standard library, pytest...) stay its own,
    as a candidate on the end of sys.path could not shadow them either; but ``own`` (the
    modules the tests import the candidate under) are always the candidate's, even where a
    copy is installed here (child/shared/imports.py says why). ``locations``: the candidate's
    directories, where each proxy module's ``__file__`` is found. ``benchmarks``: the suite
    uses the benchmark fixture (:attr:`Session.trusted_item` is timed only then)."""
    global _current
    session = Session(socket_from_fd(spawner_fd), report, benchmarks=benchmarks)
    for loaded in list(sys.modules):  # a copy the warm parent may have imported
        if loaded.split(".", 1)[0] in own:
            del sys.modules[loaded]
    proxied = [
        n
        for n in names
        if n in own or (n not in sys.modules and importlib.util.find_spec(n) is None)
    ]
    sys.meta_path.insert(0, ProxyFinder(session, [*proxied, *own], locations))
    _current = session
    return session


def current() -> Session | None:
    """The session :func:`install` made in this process, if any."""
    return _current
