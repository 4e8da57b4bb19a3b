"""From a pytest report to a :class:`~pytest_scorewright.protocol.wire.PhaseReport`: plain
data, so that the same record can cross a process boundary (an xdist worker, the evaluator's
sandboxed child) as JSON. Used on both sides of the sandbox; imports nothing of the parent's.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_scorewright._text import bound_message
from pytest_scorewright.protocol.wire import PhaseReport

#: Attribute set on pytest reports of held-out tests. Extra report attributes travel with the
#: report through pytest's serialisation, which is how xdist ships reports to the controller.
HELDOUT_ATTR = "scorewright_heldout"


def reduce_report(report: Any) -> PhaseReport:
    """Reduce a pytest ``TestReport`` (or ``SubtestReport``) to a :class:`PhaseReport`."""
    wasxfail = hasattr(report, "wasxfail")
    return PhaseReport(
        nodeid=report.nodeid,
        when=report.when,
        outcome=report.outcome,
        duration=float(report.duration),
        message=bound_message(_message(report)),
        wasxfail=wasxfail,
        subtest=isinstance(report, pytest.SubtestReport),
        heldout=bool(getattr(report, HELDOUT_ATTR, False)),
    )


def _message(report: Any) -> str:
    if hasattr(report, "wasxfail") and report.outcome in ("skipped", "passed"):
        reason = str(report.wasxfail)
        return f"xfail: {reason}" if reason else "xfail"
    longrepr = report.longrepr
    if longrepr is None:
        return ""
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])  # a skip: (path, lineno, reason)
    crash = getattr(longrepr, "reprcrash", None)
    crash_message = getattr(crash, "message", None)
    if crash_message:
        return str(crash_message)
    return str(longrepr)
