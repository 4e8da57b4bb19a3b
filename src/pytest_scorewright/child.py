"""Code that runs inside the sandboxed child, next to the candidate.

Nothing here decides anything: the child reports what pytest reported, one message per
phase, over a pipe the parent opened before any candidate code ran. The parent treats the
messages as evidence. The child never returns into the caller's code: it ends with
``os._exit`` so that no candidate ``atexit`` handler, non-daemon thread or buffered
finaliser runs after pytest.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

import pytest

from pytest_scorewright.channel import send
from pytest_scorewright.outcomes import reduce_report
from pytest_scorewright.result import bound_message

#: Exit codes of the child process itself (not pytest's), read by the parent.
EXIT_OK = 0
EXIT_CHILD_ERROR = 70
_BATCH = 500


class ChildReporter:
    """A pytest plugin that streams reports to the parent instead of writing a file."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        items = session.items
        for i in range(0, max(len(items), 1), _BATCH):  # batches keep frames under the limit
            batch = items[i : i + _BATCH]
            ids = [item.nodeid for item in batch]
            heldout = [item.get_closest_marker("heldout") is not None for item in batch]
            send(self.fd, {"type": "collected", "ids": ids, "heldout": heldout})

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
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
        send(self.fd, {"type": "finish", "exitstatus": int(exitstatus)})


def run_pytest(fd: int, args: Sequence[str], extra_path: Sequence[str]) -> NoReturn:
    """Run pytest in this (already sandboxed) process and exit; never returns."""
    code = EXIT_CHILD_ERROR
    try:
        sys.dont_write_bytecode = True
        # Appended, not prepended: the candidate can add modules but never shadow the
        # standard library, pytest, or anything else already importable.
        sys.path.extend(extra_path)
        pytest.main(list(args), plugins=[ChildReporter(fd)])
        code = EXIT_OK
    except BaseException as exc:  # anything here must reach the parent as data
        with contextlib.suppress(BaseException):  # the pipe may be gone; exit regardless
            send(fd, {"type": "child_error", "reason": bound_message(_describe(exc))})
    finally:
        os._exit(code)


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def child_main(fd: int, prepare: Any, args: Sequence[str], extra_path: Sequence[str]) -> NoReturn:
    """Entry point in the forked child: enter the sandbox via ``prepare()``, run pytest."""
    try:
        prepare()
    except BaseException as exc:
        try:
            send(fd, {"type": "sandbox_error", "reason": bound_message(_describe(exc))})
        finally:
            os._exit(EXIT_CHILD_ERROR)
    run_pytest(fd, args, extra_path)
