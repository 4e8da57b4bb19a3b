"""Running pytest in the sandboxed child, next to the candidate.

Called in the worker W once it is confined (child/setup/processes.py). Nothing here decides
anything: the reporter (reporter.py) streams what pytest reports, and the child never returns
into the caller's code.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, NoReturn

import pytest

from pytest_scorewright._text import bound_message
from pytest_scorewright.child.shared import coverage_probe
from pytest_scorewright.child.shared.imports import prefer_candidate
from pytest_scorewright.child.shared.monitor import Monitor, arm
from pytest_scorewright.child.test_process import timed_results
from pytest_scorewright.child.test_process.identities import test_process_identities
from pytest_scorewright.child.test_process.reporter import EXIT_OK, ChildReporter, flush_std_streams
from pytest_scorewright.child.test_process.resume import adopt, load_initial_conftests, resume
from pytest_scorewright.child.test_process.test_clock import Limit, TestClock
from pytest_scorewright.protocol import wire
from pytest_scorewright.protocol.channel import send
from pytest_scorewright.protocol.wire import MonitorPaths

if TYPE_CHECKING:
    from pytest_scorewright.child.test_process.proxy import Session
    from pytest_scorewright.child.test_process.resume import Prepared

#: Exit code of the child when pytest could not run at all.
EXIT_CHILD_ERROR = 70


def run_pytest(
    fd: int,
    args: Sequence[str],
    extra_path: Sequence[str],
    watch: MonitorPaths | None = None,
    plugins: Sequence[str] = (),
    prepared: Prepared | None = None,
    *,
    early_conftests: bool = False,
    proxy: tuple[int, tuple[str, ...], tuple[str, ...]] | None = None,
    candidate_modules: Sequence[str] = (),
    coverage: bool = False,
    round_key: str = "",
    benchmarks: bool = True,
    test_limits: tuple[Mapping[str, Limit], Limit | None] = ({}, None),
) -> NoReturn:
    """Run pytest in this (already sandboxed) process and exit; never returns.

    ``plugins`` are module names, imported here (the warm parent has most of them already)
    and handed to pytest as objects: ``-p name`` would make pytest scan every installed
    distribution's entry points for that name, ~5 ms a plugin. ``prepared`` is the
    configuration the warm parent parsed for ``args`` and ``plugins``, perhaps with its
    session started (prepared.py): the run continues from there instead of parsing again,
    loading the suite's initial conftest.py first if ``early_conftests``.
    ``candidate_modules`` are imported from ``extra_path`` only (imports.py), or, with
    ``proxy`` (isolation by process: the spawner's socket, the candidate's module names and
    its directories), answered by proxies even where a copy is installed here. ``coverage``:
    the lines of the candidate's files that run are measured where its code runs.
    ``round_key`` keys the seeds of fresh-argument benchmark rounds (timed_results.py);
    ``benchmarks``: the suite uses the benchmark fixture (proxy.py times more for it).
    ``test_limits``: the tests' own (wall, CPU) limits and the others' (test_clock.py).
    """
    code = EXIT_CHILD_ERROR
    try:
        sys.dont_write_bytecode = True
        timed_results.use_round_key(round_key)
        measuring = None
        if coverage and proxy is None and watch is not None:  # before any candidate import
            measuring = coverage_probe.start(watch.candidate_dir)
        # Plugins first, while the candidate's directory is not on the path yet; it is then
        # appended, not prepended: the candidate can add modules but never shadow the
        # standard library, pytest, or anything else already importable.
        loaded = [importlib.import_module(name) for name in plugins]
        sys.path.extend(extra_path)
        if candidate_modules and proxy is None:
            prefer_candidate(candidate_modules, extra_path)
        adopt(prepared)
        monitor = None
        covered: Callable[[], tuple[list[str], list[str]]] | None = None
        if watch is not None:
            monitor = arm(
                fd, watch.candidate_dir, watch.tests_dir, watch.writable, test_process_identities()
            )
        clock = TestClock(test_limits[0], test_limits[1], _no_pid)
        if proxy is not None:
            session = _proxies(proxy, monitor, candidate_modules, benchmarks)
            covered = session.coverage if coverage else None
            clock.candidate_pid = functools.partial(getattr, session, "pid")
        if measuring is not None and watch is not None:
            covered = functools.partial(coverage_probe.executed, measuring, watch.candidate_dir)
        reporter = ChildReporter(fd, monitor, covered, clock)
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
        flush_std_streams()
        code = EXIT_OK
    except BaseException as exc:  # anything here must reach the parent as data
        with contextlib.suppress(BaseException):  # the pipe may be gone; exit regardless
            send(fd, {"type": wire.CHILD_ERROR, "reason": bound_message(_describe(exc))})
    finally:
        os._exit(code)


def _no_pid() -> int | None:
    return None


def _proxies(
    proxy: tuple[int, tuple[str, ...], tuple[str, ...]],
    monitor: Monitor | None,
    candidate_modules: Sequence[str],
    benchmarks: bool,
) -> Session:
    """Isolation by process: the candidate's modules are proxies to its own process
    (child/test_process/proxy.py), which the spawner starts when the tests first import one."""
    from pytest_scorewright.child.test_process.proxy import install

    spawner, names, locations = proxy
    session = install(
        spawner,
        names,
        report=monitor.finding if monitor is not None else None,
        own=candidate_modules,
        locations=locations,
        benchmarks=benchmarks,
    )
    if monitor is not None:
        monitor.before_answer = session.check
    return session


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
