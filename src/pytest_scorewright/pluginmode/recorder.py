"""The plugin-mode collector: gathers reports in an ordinary pytest run and writes the result.

Reports are gathered in ``pytest_runtest_logreport`` in the process that reports (the only
process without xdist, the controller with it), so ``pytest -n N`` needs nothing special but
two facts only workers know: which tests are held out (known at collection) and coverage
data. Workers send both in ``workeroutput``; nothing is written on a worker.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import TYPE_CHECKING, Any

import pytest

from pytest_scorewright._text import bound_message
from pytest_scorewright.child.test_process.bench import BENCH_STATS
from pytest_scorewright.errors import OutputPathError
from pytest_scorewright.pluginmode.plugin_options import PluginSettings
from pytest_scorewright.protocol.phases import HELDOUT_ATTR, reduce_report
from pytest_scorewright.result import Benchmark, CollectionError, ScoreResult, write_atomic
from pytest_scorewright.results.ctrf import ctrf_json
from pytest_scorewright.results.measure import build_result
from pytest_scorewright.results.outcomes import OutcomeTracker

if TYPE_CHECKING:
    from collections.abc import Generator
    from pathlib import Path

    from pytest_scorewright.pluginmode.coverage_session import CoverageSession

HELDOUT_KEY = pytest.StashKey[bool]()
_WORKER_HELDOUT = "scorewright_heldout"
_WORKER_COVERAGE = "scorewright_cov"
_WORKER_SKIPS = "scorewright_collect_skips"
#: Attribute of a call report with the benchmark fixture's figures: extra report attributes
#: travel with the report to the xdist controller, as HELDOUT_ATTR does.
BENCH_ATTR = "scorewright_benchmark"


class ScoreRecorder:
    """Registered in ``pytest_configure`` when the plugin is active; one per session."""

    def __init__(
        self,
        config: pytest.Config,
        settings: PluginSettings,
        out: Path | None,
        coverage: CoverageSession | None,
        *,
        ctrf: Path | None = None,
    ) -> None:
        self.config = config
        self.settings = settings
        self.out = out
        self.ctrf = ctrf
        self.coverage = coverage
        self.is_worker = hasattr(config, "workerinput")
        self.tracker = OutcomeTracker()
        self.collection_errors: list[CollectionError] = []
        self.interrupted: str | None = None
        self.internal_error: str | None = None
        self.started: float | None = None
        self.result: ScoreResult | None = None
        self.write_error: str | None = None
        self.benchmarks: dict[str, Benchmark] = {}

    # -- every process that runs tests -----------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.started = time.perf_counter()

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.skipped:
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
            message = bound_message(str(reason))
            if self.is_worker:
                # xdist forwards only the first of several identical skip reports (same
                # location and reason), so workers send every one themselves.
                self._workeroutput().setdefault(_WORKER_SKIPS, []).append([report.nodeid, message])
            else:
                self.tracker.skip_collector(report.nodeid, message)
        if report.failed:
            self.collection_errors.append(
                CollectionError(report.nodeid, bound_message(str(report.longrepr)))
            )

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        hook = session.config.hook
        heldout_ids = []
        for item in session.items:
            heldout = bool(hook.pytest_scorewright_heldout(item=item))
            item.stash[HELDOUT_KEY] = heldout
            self.tracker.expect(item.nodeid, heldout=heldout)
            if heldout:
                heldout_ids.append(item.nodeid)
        if self.is_worker:
            self._workeroutput()[_WORKER_HELDOUT] = heldout_ids

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if item.stash.get(HELDOUT_KEY, False):
            setattr(report, HELDOUT_ATTR, True)
        stats = item.stash.get(BENCH_STATS, None)
        if stats is not None and report.when == "call":
            setattr(report, BENCH_ATTR, dict(stats))
        return report

    # -- the reporting process (no xdist, or the xdist controller) ---------------------------

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if not self.is_worker:
            self.tracker.add(reduce_report(report))
            figures = _benchmark(getattr(report, BENCH_ATTR, None))
            if figures is not None:
                self.benchmarks[report.nodeid] = figures

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        for nodeid in ids:
            self.tracker.expect(nodeid, heldout=False)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        output = getattr(node, "workeroutput", None) or {}
        for nodeid in output.get(_WORKER_HELDOUT, []):
            self.tracker.expect(nodeid, heldout=True)
        for nodeid, message in output.get(_WORKER_SKIPS, []):
            self.tracker.skip_collector(nodeid, message)
        if self.coverage is not None:
            self.coverage.merge(output.get(_WORKER_COVERAGE, ""))

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        # pytest routes both KeyboardInterrupt and pytest.exit() here.
        text = str(getattr(excinfo.value, "msg", "") or excinfo.value)
        self.interrupted = f"{excinfo.typename}: {text}" if text else excinfo.typename

    def pytest_internalerror(self, excrepr: object) -> None:
        lines = str(excrepr).strip().splitlines()
        self.internal_error = lines[-1] if lines else "unknown"

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.coverage is not None:
            self.coverage.stop()
        if self.is_worker:
            if self.coverage is not None:
                self._workeroutput()[_WORKER_COVERAGE] = self.coverage.dumps()
            return
        duration = time.perf_counter() - self.started if self.started is not None else None
        records = [
            dataclasses.replace(r, benchmark=self.benchmarks[r.nodeid])
            if r.nodeid in self.benchmarks
            else r
            for r in self.tracker.records()
        ]
        self.result = build_result(
            records,
            mode="plugin",
            duration_s=duration,
            coverage=self.coverage.figures() if self.coverage is not None else None,
            collection_errors=self.collection_errors,
            error=self._session_error(exitstatus),
        )
        self.config.hook.pytest_scorewright_result(result=self.result, config=self.config)
        try:
            if self.out is not None:
                self.result.write(self.out)
            if self.ctrf is not None:
                write_atomic(self.ctrf, ctrf_json(self.result))
        except OutputPathError as exc:
            self.write_error = str(exc)
            session.exitstatus = pytest.ExitCode.INTERNAL_ERROR

    def _session_error(self, exitstatus: int) -> str | None:
        if self.internal_error is not None:
            return f"pytest internal error: {self.internal_error}"
        if self.collection_errors:
            return None  # build_result names the first collection error
        if self.interrupted is not None:
            return f"session interrupted ({self.interrupted})"
        if exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
            return "no tests collected"
        return None

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.is_worker or self.result is None:
            return
        from pytest_scorewright.results.summary import summary_lines

        for line in summary_lines(self.result, self.out, self.write_error):
            terminalreporter.write_line(line)
        if self.ctrf is not None and self.write_error is None:
            terminalreporter.write_line(f"scorewright: wrote CTRF report {self.ctrf}")

    def _workeroutput(self) -> dict[str, Any]:
        output: dict[str, Any] = self.config.workeroutput  # type: ignore[attr-defined]
        return output


def _benchmark(stats: Any) -> Benchmark | None:
    """The figures a call report carries, if well formed (plugin mode trusts the run, but a
    result file must never hold a NaN)."""
    if not isinstance(stats, dict):
        return None
    try:
        figures = Benchmark(
            median_s=float(stats["median_s"]),
            min_s=float(stats["min_s"]),
            iqr_s=float(stats["iqr_s"]),
            rounds=int(stats["rounds"]),
            iterations=int(stats["iterations"]),
            overhead_s=float(stats["overhead_s"]),
            first_s=float(stats.get("first_s", 0.0)),
        )
    except (KeyError, TypeError, ValueError):
        return None
    numbers = (
        figures.median_s,
        figures.min_s,
        figures.iqr_s,
        figures.overhead_s,
        figures.first_s,
    )
    return figures if all(math.isfinite(n) and n >= 0 for n in numbers) else None
