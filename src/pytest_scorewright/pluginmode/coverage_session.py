"""Coverage of the code under test, through coverage.py's public API.

Each process that runs tests (the only process without xdist; each xdist worker with it)
measures into memory; the data travels to the process that reports as bytes, and the totals
come from coverage.py's own JSON report, so our figure is coverage.py's figure.
"""

from __future__ import annotations

import base64
import json
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import coverage
from coverage.exceptions import CoverageException

from pytest_scorewright.results.measure import CoverageFigures


class CoverageSession:
    """Measure, merge and total coverage for a set of sources.

    Example::

        session = CoverageSession(["mypkg"], branch=False)
        session.start()
        ...  # run tests
        session.stop()
        figures = session.figures()
    """

    def __init__(self, sources: Sequence[str], *, branch: bool, read_config: bool = True) -> None:
        self.sources = list(sources)
        self.branch = branch
        # The user's own .coveragerc (omit, exclude_lines) is honoured in plugin mode so that
        # our figure agrees with coverage.py's; the evaluator passes read_config=False.
        self._read_config = read_config
        self._measuring: coverage.Coverage | None = None
        self._merged: list[bytes] = []

    def _new(self) -> coverage.Coverage:
        cov = coverage.Coverage(
            data_file=None,
            source=self.sources,
            branch=self.branch,
            config_file=self._read_config,
        )
        if _sysmon_is_better(self.branch) and cov.get_option("run:core") is None:
            # coverage.py still defaults to its C tracer before Python 3.14; sys.monitoring
            # (PEP 669) costs less. Only where neither COVERAGE_CORE nor the user's config
            # chose a core.
            cov.set_option("run:core", "sysmon")
        return cov

    def start(self) -> None:
        self._measuring = self._new()
        self._measuring.start()

    def stop(self) -> None:
        if self._measuring is not None:
            self._measuring.stop()

    def discard(self) -> None:
        """Stop measuring and forget it, silently (the xdist controller runs no tests, and
        coverage.py would otherwise warn that it collected nothing)."""
        if self._measuring is not None:
            self._measuring.set_option(
                "run:disable_warnings", ["no-data-collected", "module-not-imported"]
            )
            self._measuring.stop()
            self._measuring = None

    def dumps(self) -> str:
        """This process's data, as text that survives any transport (xdist, a pipe)."""
        if self._measuring is None:
            return ""
        return base64.b64encode(self._measuring.get_data().dumps()).decode("ascii")

    def merge(self, blob: str) -> None:
        if blob:
            self._merged.append(base64.b64decode(blob))

    def figures(self) -> CoverageFigures | None:
        """Totals over this process's data and every merged blob; None if nothing measured."""
        reporter = self._new()
        data = reporter.get_data()
        blobs = list(self._merged)
        if self._measuring is not None:
            blobs.append(self._measuring.get_data().dumps())
        for blob in blobs:
            part = coverage.CoverageData(no_disk=True)
            part.loads(blob)
            data.update(part)
        with tempfile.TemporaryDirectory(prefix="scorewright-cov-") as tmp:
            out = Path(tmp, "coverage.json")
            try:
                reporter.json_report(outfile=str(out))
            except CoverageException:  # NoDataError included: nothing measured, no signal
                return None
            totals = json.loads(out.read_text(encoding="utf-8"))["totals"]
        return CoverageFigures(
            covered_lines=int(totals["covered_lines"]),
            num_statements=int(totals["num_statements"]),
            covered_branches=int(totals["covered_branches"]) if self.branch else None,
            num_branches=int(totals["num_branches"]) if self.branch else None,
        )


def _sysmon_is_better(branch: bool) -> bool:
    """sys.monitoring exists from 3.12; coverage.py measures branches with it from 3.14."""
    if os.environ.get("COVERAGE_CORE"):
        return False
    return sys.version_info >= (3, 14) or (sys.version_info >= (3, 12) and not branch)
