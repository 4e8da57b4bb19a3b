"""Code that runs inside the sandboxed child, next to the candidate.

Nothing here decides anything: the child reports what pytest reported, one message per
phase, over a pipe the parent opened before any candidate code ran. The parent treats the
messages as evidence. The child never returns into the caller's code: it ends with
``os._exit`` so that no candidate ``atexit`` handler, non-daemon thread or buffered
finaliser runs after pytest.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import NoReturn

import pytest

from pytest_scorewright.child.anchors import ANCHOR_SINK
from pytest_scorewright.child.monitor import Monitor, arm, skipped_by_candidate
from pytest_scorewright.result import bound_message
from pytest_scorewright.results.outcomes import reduce_report
from pytest_scorewright.sandbox.channel import send
from pytest_scorewright.warm.prepared import Prepared, adopt, load_initial_conftests, resume

#: Exit codes of the child process itself (not pytest's), read by the parent.
EXIT_OK = 0
EXIT_CHILD_ERROR = 70
_BATCH = 500
#: Exceptions that end a test without failing it; from candidate code they are gaming.
_ESCAPES = frozenset({"Skipped", "XFailed", "SkipTest", "Exit", "KeyboardInterrupt"})


class ChildReporter:
    """A pytest plugin that streams reports to the parent instead of writing a file."""

    def __init__(self, fd: int, monitor: Monitor | None = None) -> None:
        self.fd = fd
        self.monitor = monitor
        self.plugins_before: set[int] = set()
        self.config: pytest.Config | None = None

    def pytest_configure(self, config: pytest.Config) -> None:
        self.config = config
        fd = self.fd
        config.stash[ANCHOR_SINK] = lambda message: send(fd, message)

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection(self, session: pytest.Session) -> None:
        # Test modules (and so the candidate) are imported from here on.
        self.plugins_before = {id(p) for p in session.config.pluginmanager.get_plugins()}
        if self.monitor is not None:
            self.monitor.take_snapshot()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        # Look before the other hooks run: pytest's unittest support replaces a SkipTest
        # with a fresh Skipped whose traceback no longer shows who raised it.
        excinfo = call.excinfo
        if self.monitor is not None and excinfo is not None:
            kind = excinfo.type.__name__
            if kind in _ESCAPES:
                where = skipped_by_candidate(self.monitor, excinfo)
                if where is not None:
                    self.monitor.finding(
                        "skip_from_candidate", f"{where} raised {kind} inside {item.nodeid}"
                    )
        report: pytest.TestReport = yield
        return report

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        items = session.items
        for i in range(0, max(len(items), 1), _BATCH):  # batches keep frames under the limit
            batch = items[i : i + _BATCH]
            ids = [item.nodeid for item in batch]
            heldout = [item.get_closest_marker("heldout") is not None for item in batch]
            send(self.fd, {"type": "collected", "ids": ids, "heldout": heldout})

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.skipped and self.monitor is not None and isinstance(report.longrepr, tuple):
            path = str(report.longrepr[0])
            if os.path.abspath(path).startswith(self.monitor.candidate_dir):
                self.monitor.finding(
                    "skip_from_candidate", f"candidate code skipped the module {report.nodeid}"
                )
        if report.failed:
            message = bound_message(str(report.longrepr))
            send(self.fd, {"type": "collect_error", "nodeid": report.nodeid, "message": message})

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        send(self.fd, {"type": "report", **reduce_report(report).to_wire()})

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        text = str(getattr(excinfo.value, "msg", "") or excinfo.value)
        send(
            self.fd, {"type": "interrupted", "reason": bound_message(f"{excinfo.typename}: {text}")}
        )

    def pytest_internalerror(self, excrepr: object) -> None:
        lines = str(excrepr).strip().splitlines()
        send(
            self.fd, {"type": "internal_error", "reason": bound_message(lines[-1] if lines else "")}
        )

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.monitor is not None:
            self.monitor.final_checks()
            self._check_plugins(session, self.monitor)
        send(self.fd, {"type": "finish", "exitstatus": int(exitstatus)})
        # The parent has everything it needs. What pytest would still do (the terminal
        # summary, re-rendering failures; unconfigure, with its repeated gc.collect() for
        # unraisable exceptions; candidate plugins' unconfigure hooks) costs ~10-15 ms a run
        # and can change nothing in the verdict.
        _flush_std_streams()
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


@dataclass(frozen=True)
class Watch:
    """What the monitor needs to tell candidate actions from the suite's."""

    candidate_dir: str
    tests_dir: str
    writable: tuple[str, ...]


def run_pytest(
    fd: int,
    args: Sequence[str],
    extra_path: Sequence[str],
    watch: Watch | None = None,
    plugins: Sequence[str] = (),
    prepared: Prepared | None = None,
    *,
    early_conftests: bool = False,
) -> NoReturn:
    """Run pytest in this (already sandboxed) process and exit; never returns.

    ``plugins`` are module names, imported here (the warm parent has most of them already)
    and handed to pytest as objects: ``-p name`` would make pytest scan every installed
    distribution's entry points for that name, ~5 ms a plugin. ``prepared`` is the
    configuration the warm parent parsed for ``args`` and ``plugins``, perhaps with its
    session started (prepared.py): the run continues from there instead of parsing again,
    loading the suite's initial conftest.py first if ``early_conftests``.
    """
    code = EXIT_CHILD_ERROR
    try:
        sys.dont_write_bytecode = True
        # Plugins first, while the candidate's directory is not on the path yet; it is then
        # appended, not prepended: the candidate can add modules but never shadow the
        # standard library, pytest, or anything else already importable.
        loaded = [importlib.import_module(name) for name in plugins]
        sys.path.extend(extra_path)
        adopt(prepared)
        monitor = None
        if watch is not None:
            monitor = arm(fd, watch.candidate_dir, watch.tests_dir, watch.writable)
        reporter = ChildReporter(fd, monitor)
        if prepared is None:
            pytest.main(list(args), plugins=[reporter, *loaded])
        else:
            # Registered after configuring, where it was: its pytest_configure is replayed.
            prepared.config.pluginmanager.register(reporter)
            if prepared.session is not None:
                resume(prepared)
            else:
                if early_conftests:
                    load_initial_conftests(prepared)
                prepared.config.hook.pytest_cmdline_main(config=prepared.config)
        _flush_std_streams()
        code = EXIT_OK
    except BaseException as exc:  # anything here must reach the parent as data
        with contextlib.suppress(BaseException):  # the pipe may be gone; exit regardless
            send(fd, {"type": "child_error", "reason": bound_message(_describe(exc))})
    finally:
        os._exit(code)


def _flush_std_streams() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
