"""A ScoreResult as a CTRF report (Common Test Report Format, spec version 0.0.0).

Example::

    from pytest_scorewright.results.ctrf import ctrf_report

    report = ctrf_report(ScoreResult.read("fitness.json"))

CTRF has five statuses; each test keeps its pytest outcome in ``rawStatus``. ``passed`` and
``skipped`` count as pytest counts them; ``failed`` is pytest's failed plus its errors
(setup/teardown errors, collection errors, timeouts); ``xfailed`` is skipped, as pytest
reports it; ``xpassed`` and ``not_run`` (a test the run never reported) are ``other``: neither
is a pass in a score. Held-out tests carry ``extra.heldout``; their names and messages are in
the report, so it belongs with the trusted side, not in a loop's prompt.
"""

from __future__ import annotations

import datetime
import json
from typing import Any

from pytest_scorewright._version import __version__
from pytest_scorewright.result import Outcome, ScoreResult, TestRecord

#: The CTRF specification version these reports follow.
SPEC_VERSION = "0.0.0"
STATUSES = ("passed", "failed", "skipped", "pending", "other")

_STATUS: dict[Outcome, str] = {
    "passed": "passed",
    "failed": "failed",
    "error": "failed",
    "timeout": "failed",
    "skipped": "skipped",
    "xfailed": "skipped",
    "xpassed": "other",
    "not_run": "other",
}


def ctrf_report(result: ScoreResult) -> dict[str, Any]:
    """The CTRF document for ``result``: one test entry per collected test, and one failed
    entry per collection error (pytest counts those among its errors)."""
    tests = [_test(t) for t in result.tests]
    tests += [
        {
            "name": c.nodeid or "<collection>",
            "status": "failed",
            "duration": 0,
            "rawStatus": "collection_error",
            "message": c.message,
            "filePath": c.nodeid.split("::")[0],
            "extra": {"collection_error": True},
        }
        for c in result.collection_errors
    ]
    summary: dict[str, Any] = {"tests": len(tests), **dict.fromkeys(STATUSES, 0)}
    for test in tests:
        summary[test["status"]] += 1
    stop_ms = _stop_ms(result)
    duration_ms = _ms(result.signal("duration_s"))
    summary["start"] = stop_ms - duration_ms
    summary["stop"] = stop_ms
    summary["duration"] = duration_ms
    tool: dict[str, Any] = {"name": "pytest"}
    if result.environment.get("pytest"):
        tool["version"] = str(result.environment["pytest"])
    extra: dict[str, Any] = {
        "ok": result.ok,
        "error": result.error,
        "infrastructure": result.infrastructure,
        "mode": result.mode,
        "integrity": {
            "flagged": result.integrity.flagged,
            "rejected": result.integrity.rejected,
            "reasons": sorted({r.code for r in result.integrity.reasons}),
        },
        "signals": {s.name: s.value for s in result.signals},
    }
    fitness = result.extra.get("fitness")
    if isinstance(fitness, dict):
        extra["combined_score"] = fitness.get("combined_score")
    return {
        "reportFormat": "CTRF",
        "specVersion": SPEC_VERSION,
        "timestamp": _timestamp(stop_ms),
        "generatedBy": f"pytest-scorewright {__version__}",
        "results": {
            "tool": tool,
            "summary": summary,
            "tests": tests,
            "extra": {"scorewright": extra},
        },
    }


def ctrf_json(result: ScoreResult) -> str:
    return json.dumps(ctrf_report(result), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def _test(t: TestRecord) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": t.nodeid,
        "status": _STATUS[t.outcome],
        "duration": _ms(t.duration_s),
        "rawStatus": t.outcome,
        "filePath": t.nodeid.split("::")[0],
    }
    if t.message:
        entry["message"] = t.message
    extra: dict[str, Any] = {"heldout": t.heldout, "phase": t.phase}
    if t.subtests is not None:
        extra["subtests"] = dict(t.subtests)
    entry["extra"] = extra
    return entry


def _ms(seconds: float | None) -> int:
    return round(seconds * 1000) if seconds is not None and seconds > 0 else 0


def _stop_ms(result: ScoreResult) -> int:
    # The environment stamp is taken when the result is built, as the run ends.
    stamp = result.environment.get("timestamp")
    if isinstance(stamp, str):
        try:
            return round(datetime.datetime.fromisoformat(stamp).timestamp() * 1000)
        except ValueError:
            pass
    return round(datetime.datetime.now(datetime.timezone.utc).timestamp() * 1000)


def _timestamp(ms: int) -> str:
    moment = datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc)
    return moment.isoformat(timespec="seconds")
