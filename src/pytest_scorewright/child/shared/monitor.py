"""Runtime tripwires inside the sandboxed child, armed before any candidate code runs.

Findings go to the parent as messages; they are evidence, never a pass, and the parent files
each under the test it saw running and sets it against what the reference did there
(integrity/relative.py). A candidate can stay quiet by not doing these things; it cannot turn
a finding into a pass, and what it would need to silence the monitor (``gc`` walks, frame
access, patching pytest) is itself on the list.

- An audit hook (``sys.addaudithook``: it cannot be removed) attributes events to the code
  that caused them, and reports those caused by candidate code: reading the test files,
  writing outside the candidate's own directories, frame and ``gc`` introspection (including
  a traceback's ``tb_frame``, whatever name the attribute was read by), signals, tracing
  hooks, patching classes of pytest or of this package, code compiled under a trusted file's
  name (which would have its actions blamed on trusted code) and code loaded with
  ``marshal``. Code the candidate compiles under a made-up name (``<mine>``) is the
  candidate's.
- Identity snapshots of pytest internals and the timers, of what the trusted test modules and
  conftest.py define (their oracles: child/test_process/recheck.py registers each module as it
  finishes
  importing) and of the standard-library functions tests use as oracles; compared at the end
  of every test.
- ``atexit`` registrations and threads started by candidate code.
- Skips and xfails raised from candidate code.

The monitor's own state lives in the candidate's process, so it can be changed from plain
Python. Changing it is made evidence instead: at the end of every test the reporter raises an
audit event, and the hook answers the parent with how many findings it sent (in all and in
the test), whether it was busy and a digest of its armed state; the parent checks the answer
against what it received (integrity/verdict.py, ``monitor_silenced``). A candidate that
replaces the monitor's behaviour faithfully is beyond what the in-process mode can catch; so is
one that marks its own thread as the monitor's (the per-thread guard that keeps the monitor's
own events from being taken for the candidate's), whose events in that thread are then let
through. With the candidate in a process of its own (the default where the reference allows),
its code never runs in the test process, and this monitor is out of its reach.
"""

from __future__ import annotations

import atexit
import builtins
import contextlib
import os
import re
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from types import FrameType, FunctionType, ModuleType
from typing import Any

from pytest_scorewright.child.shared import identity_table
from pytest_scorewright.protocol import wire
from pytest_scorewright.protocol.channel import send
from pytest_scorewright.protocol.phases import reduce_report

# Attributes whose identity must not change while candidate code runs (ours: own_identities()).
_PYTEST_AND_TIMERS: tuple[tuple[str, str, str], ...] = (
    ("time", "", "perf_counter"),
    ("time", "", "perf_counter_ns"),
    ("time", "", "monotonic"),
    ("time", "", "time"),
    ("time", "", "process_time"),
    ("_pytest.timing", "", "perf_counter"),
    ("_pytest.runner", "", "call_and_report"),
    ("_pytest.runner", "", "runtestprotocol"),
    ("_pytest.runner", "", "pytest_runtest_makereport"),
    ("_pytest.runner", "", "check_interactive_exception"),
    ("_pytest.reports", "TestReport", "from_item_and_call"),
    ("_pytest.reports", "TestReport", "__init__"),
    ("_pytest.python", "Function", "runtest"),
    ("_pytest.skipping", "", "pytest_runtest_makereport"),
)


#: pytest's and pluggy's modules that decide outcomes: every function, class and module bound
#: at their top level, and the methods of the classes they define, are snapshotted when
#: collection starts. Swapping a module global (``_pytest.runner.CallInfo`` for a subclass
#: that drops the call's exception) raises no audit event; the identity check sees it.
_OUTCOME_MODULES = (
    "_pytest.runner",
    "_pytest.reports",
    "_pytest.skipping",
    "_pytest.outcomes",
    "_pytest.python",
    "_pytest.main",
    "_pytest.nodes",
    "_pytest.terminal",
    "_pytest.capture",
    "_pytest.unittest",
    "_pytest.fixtures",
    "_pytest.timing",
    "_pytest.warnings",
    "_pytest.logging",
    "_pytest.assertion.rewrite",
    "_pytest.assertion.util",
    "pluggy._hooks",
    "pluggy._manager",
    "pluggy._callers",
    "pluggy._result",
)
_METHOD_KINDS = (FunctionType, classmethod, staticmethod, property)


def outcome_identities() -> tuple[tuple[str, str, str], ...]:
    """Every callable and class pytest's outcome modules bind, and their classes' methods
    (:data:`_OUTCOME_MODULES`), as (module, owner, name) keys."""
    return outcome_layout().keys


def outcome_layout() -> identity_table.Layout:
    """:func:`outcome_identities` grouped by namespace: as :func:`remember_identities` found
    them, while the same modules bind as many names; else found now."""
    if _remembered is not None and _remembered[0] == _outcome_signature():
        return _remembered[1]
    return identity_table.Layout(_find_outcome_identities())


def remember_identities() -> None:
    """Find the keys once, in the warm parent (every run's processes are forked from it with
    pytest imported): each process of a run snapshots them, twice in the test process, at
    ~1 ms a time when found there. What each key holds is looked up again at every
    snapshot, never taken from here; so are the standard library's names."""
    global _remembered
    _remembered = (_outcome_signature(), identity_table.Layout(_find_outcome_identities()))
    _oracle_names.clear()
    for name in _ORACLE_MODULES:
        module = sys.modules.get(name)
        if isinstance(module, ModuleType):
            _oracle_names[name] = (_module_signature(module), _public_callables(module))


_remembered: tuple[tuple[tuple[int, int], ...], identity_table.Layout] | None = None
#: Per standard-library oracle module: its signature and its public callables' names then.
_oracle_names: dict[str, tuple[tuple[int, int], tuple[str, ...]]] = {}


def _module_signature(module: object) -> tuple[int, int]:
    return (id(module), len(vars(module)) if isinstance(module, ModuleType) else -1)


def _outcome_signature() -> tuple[tuple[int, int], ...]:
    # A module imported, replaced or given a name since the keys were found finds them again.
    return tuple(map(_module_signature, map(sys.modules.get, _OUTCOME_MODULES)))


def _public_callables(module: ModuleType) -> tuple[str, ...]:
    return tuple(
        attr
        for attr, value in list(vars(module).items())
        if not attr.startswith("_") and callable(value)
    )


def _find_outcome_identities() -> tuple[tuple[str, str, str], ...]:
    found: list[tuple[str, str, str]] = []
    for name in _OUTCOME_MODULES:
        module = sys.modules.get(name)
        if not isinstance(module, ModuleType):
            continue
        for attr, value in list(vars(module).items()):
            if not isinstance(value, (FunctionType, type, ModuleType)):
                continue
            found.append((name, "", attr))
            if isinstance(value, type) and value.__module__ == name and value.__qualname__ == attr:
                found += [
                    (name, attr, method)
                    for method, inner in vars(value).items()
                    if isinstance(inner, _METHOD_KINDS)
                ]
    return tuple(found)


def own_identities() -> tuple[tuple[str, str, str], ...]:
    """pytest's, the timers' and the monitor's own identities: what every process it is armed
    in snapshots. The test process adds its reporter's and probes'
    (child/test_process/identities.py)."""
    ours = [
        (Monitor.__module__, "Monitor", method.__name__)
        for method in (
            Monitor.audit,
            Monitor.answer,
            Monitor.finding,
            Monitor.candidate_line,
            Monitor.check_identities,
            Monitor.check_oracles,
            Monitor.watch_module,
            Monitor.final_checks,
        )
    ]
    ours += [(f.__module__, "", f.__name__) for f in (reduce_report, send)]
    return _PYTEST_AND_TIMERS + tuple(ours)


_PROTECTED_PREFIXES = ("_pytest", "pytest", "pluggy", "pytest_scorewright", "time")
#: Findings a run may send (each test sends at most one per code); then ``findings_capped``.
_MAX_FINDINGS = 5000
#: Processes candidate code may start in one run before it is evidence (``starts_processes``,
#: a hint that fitness functions penalise: a program that forks hundreds of processes at
#: import must not tie with a clean one).
MANY_PROCESSES = 16
#: The audit event the reporter raises at the end of every test (reporter.py).
CANARY_EVENT = "scorewright.canary"
_get_ident = threading.get_ident
#: Standard-library modules whose functions tests use as oracles; snapshotted with the
#: modules the trusted test modules bind, compared at the session's end.
_ORACLE_MODULES = (
    "builtins",
    "math",
    "cmath",
    "operator",
    "functools",
    "itertools",
    "statistics",
    "string",
    "re",
    "json",
    "random",
    "collections",
    "heapq",
    "bisect",
    "copy",
    "fractions",
    "decimal",
    "unicodedata",
)
#: /proc entries that reach this process's descriptors, environment or memory.
_PROC_INTERNALS = re.compile(r"^/proc/(self|thread-self|\d+)(/task/\d+)?/(fd(/|$)|environ$|mem$)")
#: Attribute reads (audited as object.__getattr__) that hand out a frame whose f_back leads
#: to the callers' frames.
_FRAME_READS = frozenset({"tb_frame"})


def _namespace(key: tuple[str, str, str]) -> Mapping[str, Any] | None:
    """The live namespace ``key``'s name is bound in: the module's dict or the class's."""
    module = sys.modules.get(key[0])
    if not isinstance(module, ModuleType):
        return None
    if not key[1]:
        return vars(module)
    owner = vars(module).get(key[1])
    return vars(owner) if isinstance(owner, type) else None


def _lookup(module: str, owner: str, name: str) -> object:
    mod = sys.modules.get(module)
    if mod is None:
        return None
    if not owner:
        return getattr(mod, name, None)
    # The class's own dict: getattr would make a new bound object for a classmethod each time.
    return vars(getattr(mod, owner, object)).get(name)


class Monitor:
    """Armed once per child, before pytest imports any test (and so any candidate) module."""

    def __init__(
        self,
        fd: int,
        candidate_dir: str,
        tests_dir: str,
        writable: tuple[str, ...],
        watched: tuple[tuple[str, str, str], ...] = (),
    ):
        self.fd = fd
        #: Every (module, class or "", attribute) whose identity is snapshotted.
        self.watched = own_identities() + watched
        #: Called at the start of every answer (the test process's proxy session asks the
        #: candidate's process to check itself).
        self.before_answer: Callable[[], None] | None = None
        self.candidate_dir = candidate_dir.rstrip("/") + "/"
        self.tests_dir = tests_dir.rstrip("/") + "/"
        self.writable = tuple(w.rstrip("/") + "/" for w in writable)
        #: Codes sent in the current test (one finding per code and test).
        self.seen: set[str] = set()
        self.count = 0
        #: Set, the audit hook lets every event through: the monitor is disabled, and every
        #: answer says so. Nothing of ours sets it.
        self.busy = False
        # The threads now in the monitor's own code, whose own events are not the candidate's.
        # Per thread: a flag shared by all, set and restored by one thread while another
        # was inside, stayed set (a test's clock reads /proc from a thread of its own), and
        # a right program's run read as a disabled monitor from that test on (seen under
        # load). A candidate in process can add its own thread here, as it can replace the
        # monitor's behaviour: the module docstring says what that mode cannot catch.
        self._inside: set[int] = set()
        self.snapshot: dict[tuple[str, str, str], object] = {}
        self.outcomes: tuple[tuple[Mapping[str, Any], identity_table.Group], ...] = ()
        #: Identities that already changed (reported once, in the test where they changed).
        self.changed: set[tuple[str, ...]] = set()
        #: What each trusted test module defines: path -> name -> (object, module name).
        self.oracles: dict[str, dict[str, object]] = {}
        self.namespaces: dict[str, dict[str, Any]] = {}
        self.conftests: list[str] = []
        #: Standard-library (module, name) -> the function at snapshot time.
        self.stdlib: dict[tuple[str, str], object] = {}
        #: ``stdlib`` by module, for the checks; made again when ``stdlib`` grows.
        self._stdlib_groups: tuple[tuple[str, identity_table.Group], ...] | None = None
        #: Processes candidate code started in this run (fork, spawn, subprocess, system).
        self.processes = 0
        #: Made-up file names (``<mine>``) the candidate compiled code under.
        self.pseudo: set[str] = set()
        self.trusted_roots = _trusted_roots(self.tests_dir)
        self.take_snapshot()
        self._wrap_atexit()
        self.threads_before = {t.ident for t in threading.enumerate()}
        self._send: Callable[[int, dict[str, Any]], None] = send
        self._getframe = sys._getframe
        self._handlers = _HANDLERS

    def _wrap_atexit(self) -> None:
        # atexit keeps no record of who registered what, and the standard library registers
        # handlers of its own (multiprocessing): note only registrations from candidate code.
        original = atexit.register
        monitor = self

        def register(func: Any, *args: Any, **kwargs: Any) -> Any:
            where = monitor.candidate_line(monitor._getframe(1), immediate=True)
            if where is not None:
                monitor.finding("atexit_registered", f"{where} registered an atexit handler")
            return original(func, *args, **kwargs)

        atexit.register = register  # type: ignore[assignment]

    def take_snapshot(self) -> None:
        """Record the watched identities; called again when collection starts, once pytest
        has imported everything it will use (and before any test module, so the candidate)."""
        self.snapshot = {k: v for k in self.watched if (v := _lookup(*k)) is not None}
        # A tuple (it cannot change in place) of live namespaces and what they held: the
        # state digest needs only its identity, and one check costs ~0.1 ms. Keys also in
        # the snapshot are checked there first (a timer's code is its own).
        self.outcomes = outcome_layout().snapshot(_namespace)
        self.stdlib = {}
        self._stdlib_groups = None
        for name in _ORACLE_MODULES:
            self._snapshot_module(name)

    def _snapshot_module(self, name: str) -> None:
        module = sys.modules.get(name)
        if not isinstance(module, ModuleType):
            return
        remembered = _oracle_names.get(name)
        if remembered is not None and remembered[0] == _module_signature(module):
            names = remembered[1]
        else:
            names = _public_callables(module)
        namespace = vars(module)
        for attr in names:
            value = namespace.get(attr)
            if value is not None and (name, attr) not in self.stdlib:
                self.stdlib[(name, attr)] = value
                self._stdlib_groups = None

    # -- what the trusted test modules define --------------------------------------------

    def watch_module(self, path: str, namespace: dict[str, Any]) -> None:
        """A trusted test module (or conftest.py) finished importing: snapshot the functions,
        classes and plain constants it defines or takes from trusted modules, and the
        standard-library modules it binds."""
        found: dict[str, object] = {}
        for name, value in list(namespace.items()):
            if name.startswith("__") or name.startswith("@"):
                continue
            if isinstance(value, ModuleType):
                file = str(vars(value).get("__file__") or "")
                if file.startswith(self.tests_dir):
                    found.update(
                        (f"{name}.{a}", v)
                        for a, v in list(vars(value).items())
                        if not a.startswith("_") and self._trusted_object(v)
                    )
                elif vars(value).get("__name__") and _is_library(file or "<frozen>"):
                    self._snapshot_module(str(vars(value)["__name__"]))
            elif self._trusted_object(value):
                found[name] = value
        self.oracles[path] = found
        self.namespaces[path] = namespace  # the dict the test functions' globals are
        if path.rsplit("/", 1)[-1] == "conftest.py":
            self.conftests.append(path)

    def _trusted_object(self, value: object) -> bool:
        if isinstance(value, type):
            module = _type_module(value)
        elif type(value) is FunctionType:
            module = value.__module__
        else:
            return False
        source = sys.modules.get(module or "")
        file = str(vars(source).get("__file__") or "") if source is not None else ""
        return file.startswith(self.tests_dir)

    def check_oracles(self, paths: list[str]) -> None:
        for path in paths:
            namespace = self.namespaces.get(path)
            for name, before in self.oracles.get(path, {}).items():
                owner, _, attr = name.rpartition(".")
                if owner:
                    bound = namespace.get(owner) if namespace is not None else None
                    now = vars(bound).get(attr) if isinstance(bound, ModuleType) else None
                else:
                    now = namespace.get(name) if namespace is not None else None
                if now is not before and ("oracle", path, name) not in self.changed:
                    self.changed.add(("oracle", path, name))
                    self.finding(
                        "oracle_replaced", f"{name} of {path} was replaced while the tests ran"
                    )

    # -- reporting -----------------------------------------------------------------------

    def finding(self, code: str, detail: str) -> None:
        if code in self.seen or self.count >= _MAX_FINDINGS:
            return
        self.seen.add(code)
        self.count += 1
        if self.count == _MAX_FINDINGS:
            code, detail = "findings_capped", f"the monitor stopped at {_MAX_FINDINGS} findings"
        with contextlib.suppress(OSError):
            self._send(self.fd, {"type": wire.FINDING, "code": code, "detail": detail[:300]})

    def announce(self) -> None:
        """Collection starts (no test module, so no candidate code, has been imported yet):
        tell the parent the state the monitor is armed with, the baseline of every answer."""
        with self._own():
            self._send_state(busy=self.busy)

    def _send_state(self, *, busy: bool) -> None:
        message = {
            "type": wire.CANARY,
            "sent": self.count,
            "test_findings": len(self.seen),
            "busy": busy,
            "state": self.state(),
        }
        with contextlib.suppress(OSError):
            self._send(self.fd, message)
        self.seen = set()

    def answer(self, nodeid: str) -> None:
        """The end of a test (the reporter's audit event): check the identities, then tell the
        parent what was sent and what state the monitor is in."""
        if self.before_answer is not None:
            # Isolation by process: the candidate's process checks itself first, so that
            # what it replaced there is filed under this test.
            with contextlib.suppress(Exception):
                self.before_answer()
        with self._own():
            self.check_identities()
            path = _module_path(nodeid)
            self.check_oracles([*self.conftests, path] if path else self.conftests)
            self._send_state(busy=self.busy)

    @contextlib.contextmanager
    def _own(self) -> Iterator[None]:
        """The monitor's own code runs in this thread: its events are not the candidate's."""
        me = _get_ident()
        if me in self._inside:
            yield
            return
        self._inside.add(me)
        try:
            yield
        finally:
            self._inside.discard(me)

    def state(self) -> str:
        """A digest of what the monitor was armed with: a candidate that changes any of it
        (its handlers, channel, directories, snapshots) changes the digest."""
        armed = (
            self.fd,
            self.candidate_dir,
            self.tests_dir,
            self.writable,
            id(self._send),
            id(self._getframe),
            id(self._handlers),
            id(self._inside),
            tuple((k, id(v)) for k, v in self._handlers.items()),
            tuple((k, id(v)) for k, v in self.snapshot.items()),
            id(self.outcomes),
        )
        return format(hash(armed) & (2**64 - 1), "016x")

    # -- attribution ---------------------------------------------------------------------

    def candidate_line(self, frame: FrameType | None, *, immediate: bool) -> str | None:
        """``file:line`` of the candidate frame responsible for an event, if any.

        With ``immediate`` only the frame that raised the event counts (the standard library
        calls ``sys._getframe`` itself: typing, namedtuple, logging), except that ``inspect``
        only hands frames on to its caller. Otherwise walk outwards past standard-library
        frames; the first other frame decides."""
        depth = 0
        while frame is not None and depth < 60:
            filename = frame.f_code.co_filename
            if filename.startswith(self.candidate_dir):
                return f"{filename[len(self.candidate_dir) :]}:{frame.f_lineno}"
            if filename in ("<string>", "<stdin>") or filename in self.pseudo:
                return f"{filename}:{frame.f_lineno}"  # code the candidate built and ran
            if (immediate and not filename.endswith(_INSPECT)) or not _is_library(filename):
                return None
            frame = frame.f_back
            depth += 1
        return None

    def impersonates(self, filename: str) -> bool:
        """A file name that would have its code's actions blamed on trusted code: a Python
        module of the tests, pytest, pluggy, this package or the standard library, or a
        frozen module. (Templates compiled under their own file's name, say a test's
        views/page.tpl, are not modules and impersonate nothing.)"""
        if filename.startswith("<"):
            return filename.startswith("<frozen")
        if not filename.endswith(".py"):
            return False
        return filename.startswith((self.tests_dir, *self.trusted_roots)) or _is_library(filename)

    # -- the audit hook ------------------------------------------------------------------

    def audit(self, event: str, args: tuple[Any, ...]) -> None:
        if event == CANARY_EVENT:
            self.answer(str(args[0]) if args else "")
            return
        handler = _HANDLERS.get(event)
        if handler is None or self.busy:
            return
        if event == "object.__getattr__" and (len(args) < 2 or args[1] not in _FRAME_READS):
            return  # __code__, f_code: read all the time, by everyone; cheap to let through
        me, inside = _get_ident(), self._inside
        if me in inside:
            return  # our own frame walk raises events too
        inside.add(me)
        try:
            where = self.candidate_line(self._getframe(1), immediate=event in _IMMEDIATE)
            if where is not None:
                handler(self, where, args)
        except Exception:  # noqa: S110 - a tripwire must never break a test run
            pass
        finally:
            inside.discard(me)

    # -- after the session ---------------------------------------------------------------

    def check_identities(self) -> None:
        for key, before in self.snapshot.items():
            if _lookup(*key) is not before and key not in self.changed:
                self.changed.add(key)
                name = ".".join(part for part in key if part)
                timer = key[0] == "time" or "timing" in key[0] or key[2] == "_clock"
                code = "timer_patched" if timer else "pytest_tampered"
                self.finding(code, f"{name} was replaced while the candidate ran")
        for namespace, group in self.outcomes:
            for key in group.changed(namespace):
                if key not in self.changed:
                    self.changed.add(key)
                    name = ".".join(part for part in key if part)
                    self.finding("pytest_tampered", f"{name} was replaced while the candidate ran")

    def check_stdlib(self) -> None:
        if self._stdlib_groups is None:
            self._stdlib_groups = identity_table.by_module(self.stdlib)
        for module, group in self._stdlib_groups:
            mod = sys.modules.get(module)
            try:
                namespace = vars(mod) if mod is not None else None
            except TypeError:  # an object without a __dict__ put in its place
                namespace = None
            for _, _, attr in group.changed(namespace):
                if (module, attr) not in self.changed:
                    self.changed.add((module, attr))
                    self.finding(
                        "patches_runtime", f"{module}.{attr} was replaced while the candidate ran"
                    )

    def check_between_calls(self) -> None:
        """In the candidate's own process (isolation by process), at the end of each test,
        when the test process asks: what it replaced there reaches no test, but shows what it
        tried. (~70 us: too much for every call.)"""
        with self._own():
            self.check_identities()
            self.check_stdlib()

    def final_checks(self) -> None:
        with self._own():  # our own lookups below must not be taken for the candidate's
            self.check_identities()
            self.check_oracles([*self.conftests, *self.oracles])
            self.check_stdlib()
        extra = [
            t
            for t in threading.enumerate()
            if t.ident not in self.threads_before
            and t.is_alive()
            # Idle pool workers are how honest concurrent code looks at the end.
            and not t.name.startswith(("ThreadPoolExecutor", "asyncio_"))
        ]
        if extra:
            self.finding(
                "background_threads",
                f"{len(extra)} thread(s) started by the candidate still running at the end",
            )


_STDLIB = os.path.dirname(os.__file__) + "/"
_INSPECT = "/inspect.py"


def _trusted_roots(tests_dir: str) -> tuple[str, ...]:
    """Where pytest, pluggy and this package live: code compiled under these names would be
    taken for theirs."""
    roots = []
    for name in ("_pytest", "pluggy", "pytest_scorewright"):
        module = sys.modules.get(name)
        file = getattr(module, "__file__", None)
        if file:
            roots.append(os.path.dirname(file) + "/")
    return tuple(roots)


def _type_module(cls: type) -> str:
    # Read through type's own descriptor: a metaclass of the candidate's cannot answer.
    return str(type.__dict__["__module__"].__get__(cls, type))


def _module_path(nodeid: str) -> str:
    """``tests/sub/test_x.py::t`` -> ``sub/test_x.py`` (every run copies the suite to
    tests/, under the root dir that node ids are relative to)."""
    path = nodeid.split("::", 1)[0]
    return path.split("/", 1)[1] if "/" in path else ""


def _is_library(filename: str) -> bool:
    """The standard library (not site-packages, which may live inside it)."""
    if filename.startswith("<frozen"):
        return True
    return filename.startswith(_STDLIB) and "/site-packages/" not in filename


def _on_open(m: Monitor, where: str, args: tuple[Any, ...]) -> None:
    path, mode, flags = [*args, None, None, None][:3]
    if not isinstance(path, (str, bytes, os.PathLike)):
        return
    full = os.path.abspath(os.fsdecode(path))
    writing = _is_write(mode, flags)
    if full.startswith(m.tests_dir):
        code = "modifies_tests" if writing else "reads_tests"
        m.finding(code, f"{where} opened the test file {os.path.basename(full)}")
    elif writing and not full.startswith((m.candidate_dir, *m.writable, "/dev/null")):
        m.finding("writes_outside", f"{where} tried to write {full[:120]}")
    elif _PROC_INTERNALS.match(full):
        m.finding("reads_process_internals", f"{where} opened {full[:120]}")


def _is_write(mode: Any, flags: Any) -> bool:
    if isinstance(mode, str):
        return any(c in mode for c in "wax+")
    if isinstance(flags, int):
        return bool(flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND))
    return False


def _on_remove(m: Monitor, where: str, args: tuple[Any, ...]) -> None:
    path = os.fsdecode(args[0]) if args and isinstance(args[0], (str, bytes)) else ""
    full = os.path.abspath(path) if path else ""
    if full.startswith(m.tests_dir):
        m.finding("modifies_tests", f"{where} tried to delete or move a test file")
    elif full and not full.startswith((m.candidate_dir, *m.writable)):
        m.finding("writes_outside", f"{where} tried to delete or move {full[:120]}")


def _on_listing(m: Monitor, where: str, args: tuple[Any, ...]) -> None:
    path = args[0] if args else None
    if isinstance(path, (str, bytes, os.PathLike)):
        full = os.path.abspath(os.fsdecode(path))
        if (full + "/").startswith(m.tests_dir):
            m.finding("reads_tests", f"{where} listed the test directory")
        elif _PROC_INTERNALS.match(full + "/"):
            m.finding("reads_process_internals", f"{where} listed {full[:120]}")
        elif full + "/" == os.path.dirname(m.candidate_dir.rstrip("/")) + "/":
            # The run's work dir: what lies beside the candidate's own directory is the tests.
            m.finding("reads_tests", f"{where} listed the work directory, where the tests are")


def _on_frame(m: Monitor, where: str, args: tuple[Any, ...]) -> None:
    m.finding("frame_introspection", f"{where} inspected the call stack (sys._getframe)")


def _on_gc(m: Monitor, where: str, args: tuple[Any, ...]) -> None:
    m.finding("gc_introspection", f"{where} walked the garbage collector's objects")


def _on_signal(m: Monitor, where: str, args: tuple[Any, ...]) -> None:
    m.finding("signals_processes", f"{where} sent a signal to process {args[0] if args else '?'}")


def _on_trace(m: Monitor, where: str, args: tuple[Any, ...]) -> None:
    m.finding("tracing_hook", f"{where} installed a trace or profile function")


def _on_setattr(m: Monitor, where: str, args: tuple[Any, ...]) -> None:
    obj, name = args[0], args[1] if len(args) > 1 else "?"
    module = str(getattr(obj, "__module__", "") or "")
    if module.startswith(_PROTECTED_PREFIXES):
        qual = getattr(obj, "__qualname__", type(obj).__name__)
        m.finding("pytest_tampered", f"{where} patched {module}.{qual}.{name}")


def _on_import(m: Monitor, where: str, args: tuple[Any, ...]) -> None:
    name = str(args[0]) if args else ""
    if name.startswith(("_pytest", "pluggy", "pytest_scorewright")) or name == "pytest":
        m.finding("imports_test_machinery", f"{where} imported {name}")


def _on_process(m: Monitor, where: str, args: tuple[Any, ...]) -> None:
    m.processes += 1
    if m.processes == MANY_PROCESSES + 1:  # once a run: the count is the evidence
        m.finding(
            "starts_processes", f"{where} started more than {MANY_PROCESSES} processes in one run"
        )


def _on_ctypes(m: Monitor, where: str, args: tuple[Any, ...]) -> None:
    m.finding("raw_memory_access", f"{where} used ctypes to read or write memory")


def _on_getattr(m: Monitor, where: str, args: tuple[Any, ...]) -> None:
    if len(args) > 1 and args[1] in _FRAME_READS:
        m.finding("frame_introspection", f"{where} took a frame from a traceback ({args[1]})")


def _on_compile(m: Monitor, where: str, args: tuple[Any, ...]) -> None:
    source, filename = [*args, None, None][:2]
    name = os.fsdecode(filename) if isinstance(filename, (str, bytes)) else ""
    if not name or name.startswith(m.candidate_dir) or name in ("<string>", "<stdin>"):
        return
    if not m.impersonates(name):
        m.pseudo.add(name)  # <mine>, /tmp/x.py: the candidate's code, wherever it says it is
    elif not _same_as_file(source, name):
        m.finding("unattributable_code", f"{where} compiled code under the name {name[:120]}")


def _on_code_new(m: Monitor, where: str, args: tuple[Any, ...]) -> None:
    name = str(args[1]) if len(args) > 1 else ""
    if not name or name.startswith(m.candidate_dir) or name in ("<string>", "<stdin>"):
        return
    if m.impersonates(name):
        m.finding("unattributable_code", f"{where} made a code object named {name[:120]}")
    else:
        m.pseudo.add(name)


def _on_exec(m: Monitor, where: str, args: tuple[Any, ...]) -> None:
    code = args[0] if args else None
    name = getattr(code, "co_filename", "")
    if isinstance(name, str) and name and m.impersonates(name):
        m.finding("unattributable_code", f"{where} executed code named {name[:120]}")


def _on_marshal(m: Monitor, where: str, args: tuple[Any, ...]) -> None:
    data = args[0] if args else b""
    if isinstance(data, (bytes, bytearray)) and data[:1] in (b"c", b"\xe3"):  # TYPE_CODE
        m.finding("marshalled_code", f"{where} loaded code objects with marshal")


def _same_as_file(source: Any, filename: str) -> bool:
    """Honest imports compile a module from the file its name says; forged code does not."""
    if not isinstance(source, (str, bytes)):
        return False  # an AST compiled under a trusted name
    try:
        with builtins.open(filename, "rb") as handle:
            on_disk = handle.read()
    except OSError:
        return False
    return on_disk == (source.encode() if isinstance(source, str) else source)


_HANDLERS: dict[str, Callable[[Monitor, str, tuple[Any, ...]], None]] = {
    "open": _on_open,
    "os.remove": _on_remove,
    "os.rename": _on_remove,
    "os.rmdir": _on_remove,
    "os.truncate": _on_remove,
    "shutil.rmtree": _on_remove,
    "os.listdir": _on_listing,
    "os.scandir": _on_listing,
    "glob.glob": _on_listing,
    "sys._getframe": _on_frame,
    "sys._current_frames": _on_frame,
    "gc.get_objects": _on_gc,
    "gc.get_referrers": _on_gc,
    "gc.get_referents": _on_gc,
    "os.kill": _on_signal,
    "os.killpg": _on_signal,
    "signal.pthread_kill": _on_signal,
    "sys.settrace": _on_trace,
    "sys.setprofile": _on_trace,
    "object.__setattr__": _on_setattr,
    "object.__delattr__": _on_setattr,
    "import": _on_import,
    "ctypes.string_at": _on_ctypes,
    "ctypes.addressof": _on_ctypes,
    "ctypes.cdata": _on_ctypes,
    "object.__getattr__": _on_getattr,
    "compile": _on_compile,
    "code.__new__": _on_code_new,
    "exec": _on_exec,
    "marshal.loads": _on_marshal,
    "os.fork": _on_process,
    "os.forkpty": _on_process,
    "os.posix_spawn": _on_process,
    "os.spawn": _on_process,
    "os.system": _on_process,
    "subprocess.Popen": _on_process,
    "marshal.load": _on_marshal,
}


_IMMEDIATE = frozenset(
    {
        "sys._getframe",
        "sys._current_frames",
        "gc.get_objects",
        "gc.get_referrers",
        "gc.get_referents",
        # multiprocessing and subprocess signal their own workers from the stdlib.
        "os.kill",
        "os.killpg",
        "signal.pthread_kill",
        # The standard library reads tracebacks' frames itself (traceback, logging).
        "object.__getattr__",
        # importlib loads cached bytecode (each code object in it raises code.__new__), and
        # runs module code, on behalf of every import.
        "marshal.loads",
        "marshal.load",
        "code.__new__",
        "exec",
    }
)


def arm(
    fd: int,
    candidate_dir: str,
    tests_dir: str,
    writable: tuple[str, ...],
    watched: tuple[tuple[str, str, str], ...] = (),
) -> Monitor:
    """Arm the monitor; ``watched`` adds identities of the process's own
    (child/test_process/identities.py
    in the test process)."""
    global _armed
    monitor = Monitor(fd, candidate_dir, tests_dir, writable, watched)
    sys.addaudithook(monitor.audit)
    _armed = monitor
    return monitor


_armed: Monitor | None = None


def armed() -> Monitor | None:
    """This process's monitor, once armed (the benchmark fixture files findings with it)."""
    return _armed


def skipped_by_candidate(monitor: Monitor, excinfo: Any) -> str | None:
    """Where in candidate code a skip/xfail/exit was raised, if it was: the innermost
    candidate frame of the traceback (pytest.skip itself raises inside _pytest). A skip
    raised while a skip-like exception was being handled is looked through to that one:
    pytest's unittest support raises a fresh Skipped for a SkipTest unittest caught."""
    exc = getattr(excinfo, "value", None)
    tb = getattr(excinfo, "tb", None)
    for _ in range(_CONTEXTS):
        where = _innermost(monitor, tb)
        exc = getattr(exc, "__context__", None)
        if where is not None or exc is None or type(exc).__name__ not in _SKIP_LIKE:
            return where
        tb = exc.__traceback__
    return None


#: How far a chain of skips is followed, and what counts as one.
_CONTEXTS = 4
_SKIP_LIKE = frozenset({"Skipped", "XFailed", "SkipTest", "Exit"})


def _innermost(monitor: Monitor, tb: Any) -> str | None:
    where = None
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if filename.startswith(monitor.candidate_dir):
            where = f"{filename[len(monitor.candidate_dir) :]}:{tb.tb_lineno}"
        tb = tb.tb_next
    return where
