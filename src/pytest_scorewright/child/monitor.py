"""Runtime tripwires inside the sandboxed child, armed before any candidate code runs.

Findings go to the parent as messages; they are evidence of gaming, never a pass. A candidate
can stay quiet by not doing these things; it cannot turn a finding into a pass, and what it
would need to silence the monitor (``gc`` walks, frame access, patching pytest) is itself on
the list.

- An audit hook (``sys.addaudithook``: it cannot be removed) attributes events to the code
  that caused them, and reports those caused by candidate code: reading the test files,
  writing outside the candidate's own directories, frame and ``gc`` introspection, signals,
  tracing hooks, patching classes of pytest or of this package.
- Identity snapshots of pytest internals and of the timers, compared after the session.
- ``atexit`` registrations and threads started by candidate code.
- Skips and xfails raised from candidate code.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

from pytest_scorewright.results.phases import reduce_report
from pytest_scorewright.sandbox import wire
from pytest_scorewright.sandbox.channel import send

# Attributes whose identity must not change while candidate code runs (ours: watched()).
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


def watched() -> tuple[tuple[str, str, str], ...]:
    """Every (module, class or "", attribute) the monitor snapshots. Our own are named from
    the objects themselves, so a moved module moves its entry with it."""
    from pytest_scorewright.child.reporter import ChildReporter  # it imports this module

    ours = (
        (
            ChildReporter.__module__,
            "ChildReporter",
            ChildReporter.pytest_runtest_logreport.__name__,
        ),
        (reduce_report.__module__, "", reduce_report.__name__),
        (send.__module__, "", send.__name__),
    )
    return _PYTEST_AND_TIMERS + ours


_PROTECTED_PREFIXES = ("_pytest", "pytest", "pluggy", "pytest_scorewright", "time")
_MAX_FINDINGS = 50


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

    def __init__(self, fd: int, candidate_dir: str, tests_dir: str, writable: tuple[str, ...]):
        self.fd = fd
        self.candidate_dir = candidate_dir.rstrip("/") + "/"
        self.tests_dir = tests_dir.rstrip("/") + "/"
        self.writable = tuple(w.rstrip("/") + "/" for w in writable)
        self.seen: set[tuple[str, str]] = set()
        self.count = 0
        self.busy = False
        self.snapshot: dict[tuple[str, str, str], object] = {}
        self.take_snapshot()
        self._wrap_atexit()
        self.threads_before = {t.ident for t in threading.enumerate()}
        self._send: Callable[[int, dict[str, Any]], None] = send
        self._getframe = sys._getframe

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
        self.snapshot = {key: value for key in watched() if (value := _lookup(*key)) is not None}

    # -- reporting -----------------------------------------------------------------------

    def finding(self, code: str, detail: str) -> None:
        key = (code, detail[:80])
        if key in self.seen or self.count >= _MAX_FINDINGS:
            return
        self.seen.add(key)
        self.count += 1
        with contextlib.suppress(OSError):
            self._send(self.fd, {"type": wire.FINDING, "code": code, "detail": detail[:300]})

    # -- attribution ---------------------------------------------------------------------

    def candidate_line(self, frame: FrameType | None, *, immediate: bool) -> str | None:
        """``file:line`` of the candidate frame responsible for an event, if any.

        With ``immediate`` only the frame that raised the event counts (the standard library
        calls ``sys._getframe`` itself: typing, namedtuple, logging). Otherwise walk outwards
        past standard-library frames; the first other frame decides."""
        depth = 0
        while frame is not None and depth < 60:
            filename = frame.f_code.co_filename
            if filename.startswith(self.candidate_dir):
                return f"{filename[len(self.candidate_dir) :]}:{frame.f_lineno}"
            if filename in ("<string>", "<stdin>"):  # code the candidate built and ran
                return f"{filename}:{frame.f_lineno}"
            if immediate or not _is_library(filename):
                return None
            frame = frame.f_back
            depth += 1
        return None

    # -- the audit hook ------------------------------------------------------------------

    def audit(self, event: str, args: tuple[Any, ...]) -> None:
        handler = _HANDLERS.get(event)
        if handler is None or self.busy:
            return
        self.busy = True  # our own frame walk raises events too
        try:
            where = self.candidate_line(self._getframe(1), immediate=event in _IMMEDIATE)
            if where is not None:
                handler(self, where, args)
        except Exception:  # noqa: S110 - a tripwire must never break a test run
            pass
        finally:
            self.busy = False

    # -- after the session ---------------------------------------------------------------

    def final_checks(self) -> None:
        for key, before in self.snapshot.items():
            if _lookup(*key) is not before:
                name = ".".join(part for part in key if part)
                code = (
                    "timer_patched"
                    if key[0] == "time" or "timing" in key[0]
                    else ("pytest_tampered")
                )
                self.finding(code, f"{name} was replaced while the candidate ran")
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
    elif full.startswith("/proc/") and ("/fd" in full or "environ" in full or "/mem" in full):
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


def _on_ctypes(m: Monitor, where: str, args: tuple[Any, ...]) -> None:
    m.finding("raw_memory_access", f"{where} used ctypes to read or write memory")


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
    }
)


def arm(fd: int, candidate_dir: str, tests_dir: str, writable: tuple[str, ...]) -> Monitor:
    monitor = Monitor(fd, candidate_dir, tests_dir, writable)
    sys.addaudithook(monitor.audit)
    return monitor


def skipped_by_candidate(monitor: Monitor, excinfo: Any) -> str | None:
    """Where in candidate code a skip/xfail/exit was raised, if it was: the innermost
    candidate frame of the traceback (pytest.skip itself raises inside _pytest)."""
    tb = getattr(excinfo, "tb", None)
    where = None
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if filename.startswith(monitor.candidate_dir):
            where = f"{filename[len(monitor.candidate_dir) :]}:{tb.tb_lineno}"
        tb = tb.tb_next
    return where
