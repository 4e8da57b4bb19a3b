"""The pytest plugin inside the sandboxed child: it reports, it never decides.

One message per test phase goes to the parent over a pipe opened before any candidate code
ran (protocol/channel.py); the parent treats the messages as evidence. After the session's
last message the child ends with ``os._exit``, so that no candidate ``atexit`` handler,
non-daemon thread or buffered finaliser runs after pytest.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
import time
from collections.abc import Callable, Generator
from types import TracebackType
from typing import Any

import pytest

from pytest_scorewright._text import bound_message
from pytest_scorewright.child.shared.monitor import CANARY_EVENT, Monitor, skipped_by_candidate
from pytest_scorewright.child.test_process import recheck
from pytest_scorewright.child.test_process.anchors import ANCHOR_SINK
from pytest_scorewright.child.test_process.test_clock import TestClock
from pytest_scorewright.protocol import wire
from pytest_scorewright.protocol.channel import send
from pytest_scorewright.protocol.phases import reduce_report

#: Exit code of the child process itself (not pytest's), read by the parent.
EXIT_OK = 0
_BATCH = 500
#: Exceptions that end a test without failing it; from candidate code they are gaming.
_ESCAPES = frozenset({"Skipped", "XFailed", "SkipTest", "Exit", "KeyboardInterrupt"})
#: Bound before any candidate code runs: a replaced ``sys.audit`` cannot swallow the event.
_audit = sys.audit
#: Bound before candidate code too: the CPU this process spent collecting (imports included).
_process_time = time.process_time


class ChildReporter:
    """A pytest plugin that streams reports to the parent instead of writing a file."""

    def __init__(
        self,
        fd: int,
        monitor: Monitor | None = None,
        coverage: Callable[[], tuple[list[str], list[str]]] | None = None,
        clock: TestClock | None = None,
    ) -> None:
        self.fd = fd
        self.monitor = monitor
        #: Each test's own limits, and its CPU time (child/test_process/test_clock.py).
        self.clock = clock
        #: With coverage: the candidate's files that ran, and each one's lines.
        self.coverage = coverage
        self.plugins_before: set[int] = set()
        self.config: pytest.Config | None = None
        self.session: pytest.Session | None = None
        self.timeouts = 0
        self.passed = 0
        #: Where the candidate was when a test timed out (by test id, until its report).
        self.stuck: dict[str, str | None] = {}

    def pytest_configure(self, config: pytest.Config) -> None:
        self.config = config
        fd = self.fd
        config.stash[ANCHOR_SINK] = lambda message: send(fd, message)
        recheck.attach(fd, self.monitor)
        if self.clock is not None:
            self.clock.install()

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, object, object]:
        # tryfirst: outside pytest-timeout's wrapper, which reads the test's marker.
        if self.clock is None:
            return (yield)
        self.clock.apply(item)
        try:
            return (yield)
        finally:
            self.clock.stop()

    @pytest.hookimpl(tryfirst=True, optionalhook=True)
    def pytest_timeout_set_timer(self, item: pytest.Item, settings: Any) -> bool | None:
        # pytest-timeout's timer, set by the clock: its alarm fails nothing between phases.
        return self.clock.set_wall_timer(item, settings) if self.clock is not None else None

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Generator[None, None, None]:
        return (yield from self._phase())

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, None, None]:
        return (yield from self._phase())

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Generator[None, None, None]:
        return (yield from self._phase())

    def _phase(self) -> Generator[None, None, None]:
        """One phase of a test, which timeouts may fail (TestClock.in_phase)."""
        if self.clock is None:
            return (yield)
        with self.clock.phase():
            return (yield)

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection(self, session: pytest.Session) -> None:
        # Test modules (and so the candidate) are imported from here on.
        self.session = session
        self.plugins_before = {id(p) for p in session.config.pluginmanager.get_plugins()}
        if self.monitor is not None:
            self.monitor.take_snapshot()
            self.monitor.announce()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        # Look before the other hooks run (pytest's unittest support replaces a SkipTest
        # with a fresh Skipped), and after: in a unittest.TestCase test the exception is
        # not raised out of runtest at all but handed to the item as the result, and only
        # pytest's own makereport puts it on ``call`` (a SkipTest unittest caught itself
        # then shows as the context of the fresh Skipped).
        excinfo = call.excinfo
        if self.monitor is not None and excinfo is not None:
            self._look_for_skip(self.monitor, item, excinfo)
            if excinfo.type.__name__ == "Failed" and "Timeout" in str(excinfo.value):
                self.stuck[item.nodeid] = self._where_stuck(excinfo, self.monitor.candidate_dir)
        report: pytest.TestReport = yield
        after = call.excinfo
        if self.monitor is not None and after is not None and after is not excinfo:
            self._look_for_skip(self.monitor, item, after)
        return report

    @staticmethod
    def _look_for_skip(
        monitor: Monitor, item: pytest.Item, excinfo: pytest.ExceptionInfo[BaseException]
    ) -> None:
        kind = excinfo.type.__name__
        if kind in _ESCAPES:
            where = skipped_by_candidate(monitor, excinfo)
            if where is not None:
                monitor.finding(
                    "skip_from_candidate", f"{where} raised {kind} inside {item.nodeid}"
                )

    @staticmethod
    def _where_stuck(excinfo: pytest.ExceptionInfo[BaseException], candidate: str) -> str | None:
        """Where the candidate was when the test timed out: its innermost frame in the
        traceback (in process), or what its own process's stack said (apart,
        child/test_process/proxy.py)."""
        # Apart only: the test process imports the proxy module only then (never here).
        apart = sys.modules.get("pytest_scorewright.child.test_process.proxy")
        session = getattr(apart, "_current", None)
        if session is not None:
            found, session.stuck_at = session.stuck_at, None
            return str(found) if found else None
        return innermost_candidate_frame(excinfo.tb, candidate)

    @pytest.hookimpl(wrapper=True)
    def pytest_make_collect_report(
        self, collector: pytest.Collector
    ) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
        report: pytest.CollectReport = yield
        # pytest cuts a collection error's traceback to the test module's own frames: an
        # error raised while it imported the candidate (a NameError at its top level) would
        # name no line of the candidate's. The LLM needs that line.
        call = report.__dict__.get("call")
        excinfo = getattr(call, "excinfo", None)
        if report.failed and excinfo is not None and self.monitor is not None:
            where = innermost_candidate_frame(excinfo.tb, self.monitor.candidate_dir)
            if where is not None and where.split(":")[0] not in str(report.longrepr):
                # As pytest writes a frame (``file:line: in function``), just above the
                # exception's line, where the result's one-line error looks for it.
                path, _, rest = where.partition(":")
                line, _, function = rest.partition(" in ")
                report.longrepr = f"{path}:{line}: in {function}\n{report.longrepr}"
        return report

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        items = session.items
        # CPU since this process began, read once: a load on the machine stretches the
        # parent's clock over the collection, not this (integrity/reasons.py timing_reasons).
        cpu_s = round(_process_time(), 6)
        for i in range(0, max(len(items), 1), _BATCH):  # batches keep frames under the limit
            batch = items[i : i + _BATCH]
            ids = [item.nodeid for item in batch]
            heldout = [item.get_closest_marker("heldout") is not None for item in batch]
            send(
                self.fd,
                {"type": wire.COLLECTED, "ids": ids, "heldout": heldout, "cpu_s": cpu_s},
            )

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.skipped and self.monitor is not None and isinstance(report.longrepr, tuple):
            path = str(report.longrepr[0])
            if os.path.abspath(path).startswith(self.monitor.candidate_dir):
                self.monitor.finding(
                    "skip_from_candidate", f"candidate code skipped the module {report.nodeid}"
                )
        if report.failed:
            message = bound_message(str(report.longrepr))
            send(self.fd, {"type": wire.COLLECT_ERROR, "nodeid": report.nodeid, "message": message})

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "teardown" and self.monitor is not None:
            # The monitor answers through its audit hook, before the parent sees the test end.
            _audit(CANARY_EVENT, report.nodeid)
            recheck.new_test()
        reduced = reduce_report(report)
        if report.when == "teardown" and self.clock is not None and not reduced.subtest:
            reduced = dataclasses.replace(reduced, cpu=self.clock.spent())
        stuck = self.stuck.pop(report.nodeid, None) if report.when == "call" else None
        if reduced.timed_out and stuck:
            message = f"{reduced.message} (the candidate was at {stuck})"
            reduced = dataclasses.replace(reduced, message=bound_message(message))
        send(self.fd, {"type": wire.REPORT, **reduced.to_wire()})
        if reduced.subtest:
            return
        if report.when == "call" and report.outcome == "passed":
            self.passed += 1
        elif reduced.timed_out:
            self.timeouts += 1
            # A candidate hung on every input it was given stops here, as -x does (exit
            # status 1, tests failed): the parent marks the tests left not_run and says why.
            if self.timeouts >= wire.MAX_TIMEOUTS and not self.passed and self.session:
                self.session.shouldfail = f"{self.timeouts} tests timed out"
        if report.when == "teardown" and self.clock is not None:
            # One that hangs more than it works is scored on every test all the same, each
            # under the short limits: whatever the order of its tests, each gets the outcome
            # it has alone, in a fraction of a second if it hangs.
            self.clock.hanging = self.timeouts >= wire.HANG_EVIDENCE
            self.clock.short = self.timeouts > self.passed

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        text = str(getattr(excinfo.value, "msg", "") or excinfo.value)
        send(
            self.fd,
            {"type": wire.INTERRUPTED, "reason": bound_message(f"{excinfo.typename}: {text}")},
        )

    def pytest_internalerror(
        self, excrepr: object, excinfo: pytest.ExceptionInfo[BaseException]
    ) -> None:
        lines = str(excrepr).strip().splitlines()
        reason = lines[-1] if lines else ""
        # SystemExit while a test module imports the candidate ends pytest here: say where.
        where = (
            innermost_candidate_frame(excinfo.tb, self.monitor.candidate_dir)
            if self.monitor is not None
            else None
        )
        if where is not None:
            reason = f"{reason} (raised at {where})"
        send(self.fd, {"type": wire.INTERNAL_ERROR, "reason": bound_message(reason)})

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.monitor is not None:
            self.monitor.final_checks()
            self._check_plugins(session, self.monitor)
        if self.coverage is not None:
            files, lines = self.coverage()
            send(self.fd, {"type": wire.COVERAGE, "files": files, "lines": lines})
        send(self.fd, {"type": wire.FINISH, "exitstatus": int(exitstatus)})
        # The parent has everything it needs. What pytest would still do (the terminal
        # summary, re-rendering failures; unconfigure, with its repeated gc.collect() for
        # unraisable exceptions; candidate plugins' unconfigure hooks) costs ~10-15 ms a run
        # and can change nothing in the verdict.
        flush_std_streams()
        os._exit(EXIT_OK)

    def _check_plugins(self, session: pytest.Session, monitor: Monitor) -> None:
        for plugin in session.config.pluginmanager.get_plugins():
            if id(plugin) in self.plugins_before:
                continue
            module = sys.modules.get(getattr(plugin, "__module__", "") or type(plugin).__module__)
            path = getattr(plugin, "__file__", None) or getattr(module, "__file__", None) or ""
            if str(path).startswith(monitor.tests_dir):
                continue  # the trusted suite's own conftest.py files
            name = session.config.pluginmanager.get_name(plugin) or repr(plugin)[:60]
            monitor.finding("pytest_tampered", f"a plugin was registered at run time: {name}")


def innermost_candidate_frame(tb: TracebackType | None, candidate: str) -> str | None:
    """The innermost frame of ``tb`` in a file under ``candidate``, as ``file:line in
    function`` (the file relative to it), or None."""
    where = None
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename.startswith(candidate):
            rel = code.co_filename[len(candidate) :].lstrip("/")
            where = f"{rel[-120:]}:{tb.tb_lineno} in {code.co_name[:80]}"
        tb = tb.tb_next
    return where


def flush_std_streams() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
