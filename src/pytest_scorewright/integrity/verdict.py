"""The parent's verdict on one sandboxed run: expected tests and observed evidence in, test
records out.

The child's messages are evidence, not a verdict. The expected test ids come from a trusted
collection; a test the child never reported did not pass; reports for tests nobody expected,
repeated reports, reports after the session's end and malformed reports are ignored and
recorded as integrity reasons; a session that ended early is an error with its reason; and
each test's duration is the parent's own clock between messages.

Everything kept from a run is bounded whatever the child sends: reasons are one per code with
a count, monitor findings one per code with a count and at most :data:`MAX_FINDINGS` codes
(the rest counted in one more reason), collection errors at most
:data:`MAX_COLLECTION_ERRORS` (the rest counted), and every text cut to a fixed length.
"""

from __future__ import annotations

import math
import re
import signal as _signal
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_scorewright._text import bound_message
from pytest_scorewright.integrity.anchors import matches
from pytest_scorewright.result import CollectionError, Reason, TestRecord
from pytest_scorewright.results.outcomes import OutcomeTracker
from pytest_scorewright.sandbox import wire
from pytest_scorewright.sandbox.wire import Anchor, ChildOutcome, PhaseReport

_WHEN = ("setup", "call", "teardown")
_CODE = re.compile(r"[a-z][a-z0-9_]{0,40}")
_ESCAPE = re.compile(r"SystemExit|KeyboardInterrupt|\bExit: |outcomes\.Exit")
_PYTEST_OUTCOMES = ("passed", "failed", "skipped")


#: How a run ended, as the parent saw it.
ENDINGS = (
    "finished",
    "timeout",
    "crash",
    "early_exit",
    "import_error",
    "channel_broken",
    "stopped",
)

#: Distinct finding codes kept from one run: the monitor sends at most 50 findings
#: (child/monitor.py); more distinct codes are forged, and are counted, not kept.
MAX_FINDINGS = 50
#: Collection errors kept from one run; the rest are counted.
MAX_COLLECTION_ERRORS = 100
#: Longest session error text kept from the child (an interrupt's reason, say).
_REASON_CHARS = 1000


@dataclass(frozen=True)
class RunTiming:
    """Parent-clock timing of one run, and the child's own sum of test durations."""

    collected_s: float | None  # from fork to the end of collection (imports included)
    tests_s: float  # from the end of collection to the last report
    child_tests_s: float  # what pytest in the child says the tests took


@dataclass
class RunVerdict:
    records: list[TestRecord]
    error: str | None
    reasons: list[Reason] = field(default_factory=list)
    collection_errors: list[CollectionError] = field(default_factory=list)
    sandbox: dict[str, Any] = field(default_factory=dict)
    finished: bool = False
    ending: str = "finished"
    findings: list[Reason] = field(default_factory=list)
    timing: RunTiming = field(default_factory=lambda: RunTiming(None, 0.0, 0.0))
    #: Anchored values by test, as received (the reference run's become the expectations).
    anchors: dict[str, list[Anchor]] = field(default_factory=dict)


@dataclass
class _Evidence:
    expected: Mapping[str, bool]
    tracker: OutcomeTracker
    reasons: list[Reason] = field(default_factory=list)
    collection_errors: list[CollectionError] = field(default_factory=list)
    seen: set[tuple[str, str]] = field(default_factory=set)
    spans: dict[str, float] = field(default_factory=dict)
    last_end: float = 0.0
    current: str | None = None
    finish: int | None = None
    session_error: str | None = None
    sandbox: dict[str, Any] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    findings: dict[str, Reason] = field(default_factory=dict)
    finding_counts: dict[str, int] = field(default_factory=dict)
    findings_dropped: int = 0
    collection_errors_dropped: int = 0
    collected_at: float | None = None
    child_tests_s: float = 0.0
    anchors: dict[str, list[Anchor]] = field(default_factory=dict)

    def note(self, code: str, detail: str, times: int = 1) -> None:
        # One reason per code, with a count: a flood of forged reports is one finding.
        self.counts[code] = self.counts.get(code, 0) + times
        if self.counts[code] == times:
            self.reasons.append(Reason(code, bound_message(detail, 300)))

    def find(self, code: str, detail: str) -> None:
        """A monitor finding: kept once per code, counted, at most MAX_FINDINGS codes."""
        if code in self.findings:
            self.finding_counts[code] += 1
        elif len(self.findings) < MAX_FINDINGS:
            self.findings[code] = Reason(code, bound_message(detail, 300))
            self.finding_counts[code] = 1
        else:
            self.findings_dropped += 1


def judge(
    expected: Sequence[tuple[str, bool]],
    observed: ChildOutcome,
    *,
    timeout_s: float,
    reference_anchors: Mapping[str, Sequence[Anchor]] | None = None,
) -> RunVerdict:
    """Decide every expected test's outcome from what the parent observed; with
    ``reference_anchors``, anchored values are compared here, in the parent."""
    ev = _Evidence(expected=dict(expected), tracker=OutcomeTracker())
    ev.tracker.expect_all(expected)
    for index, (arrived, message) in enumerate(observed.messages):
        _consider(ev, index, arrived, message)
    if reference_anchors is not None:
        _compare_anchors(ev, reference_anchors)
    error = _session_error(ev, observed, timeout_s)
    if error is not None and ev.current is not None:
        ev.tracker.interrupt(
            ev.current,
            "timeout" if observed.timed_out else "error",
            f"the run ended during this test: {error}",
        )
    records = [
        _with_parent_duration(record, ev.spans.get(record.nodeid))
        for record in ev.tracker.records()
        if record.nodeid in ev.expected
    ]
    ev.reasons = [_counted(r, ev.counts.get(r.code, 1)) for r in ev.reasons]
    findings = [_counted(r, ev.finding_counts[code]) for code, r in ev.findings.items()]
    if ev.findings_dropped:
        findings.append(
            Reason(
                "findings_capped",
                f"{ev.findings_dropped} more finding(s) with codes beyond the first "
                f"{MAX_FINDINGS} were counted, not kept",
            )
        )
    start = ev.collected_at or 0.0
    return RunVerdict(
        records=records,
        error=error,
        reasons=ev.reasons,
        collection_errors=ev.collection_errors,
        sandbox=ev.sandbox,
        finished=ev.finish is not None,
        ending=_ending(ev, observed, error),
        findings=findings,
        anchors=ev.anchors,
        timing=RunTiming(
            collected_s=ev.collected_at,
            tests_s=round(max(ev.last_end - start, 0.0), 6),
            child_tests_s=round(ev.child_tests_s, 6),
        ),
    )


def _counted(reason: Reason, count: int) -> Reason:
    return Reason(reason.code, f"{reason.detail} (x{count})") if count > 1 else reason


def _compare_anchors(ev: _Evidence, reference: Mapping[str, Sequence[Anchor]]) -> None:
    for nodeid, wanted in reference.items():
        if nodeid not in ev.expected:
            continue
        got = ev.anchors.get(nodeid, [])
        if len(got) != len(wanted):
            ev.tracker.fail(
                nodeid, f"anchored check: expected {len(wanted)} value(s), got {len(got)}"
            )
            continue
        for i, (ref, cand) in enumerate(zip(wanted, got, strict=True)):
            if not matches(ref, cand):
                ev.tracker.fail(
                    nodeid, f"anchored check: value #{i + 1} differs from the reference"
                )
                break


def _ending(ev: _Evidence, observed: ChildOutcome, error: str | None) -> str:
    if error is None:
        return "finished"
    if observed.stopped is not None:
        return "stopped"
    if observed.timed_out:
        return "timeout"
    if observed.channel_error is not None:
        return "channel_broken"
    texts = [ev.session_error or ""] + [c.message for c in ev.collection_errors]
    if any(_ESCAPE.search(text) for text in texts):
        return "early_exit"  # sys.exit, pytest.exit, KeyboardInterrupt: never honest failures
    if ev.collection_errors:
        return "import_error"
    if observed.signal is not None or ev.session_error:
        return "crash"
    return "early_exit"  # the child stopped without pytest finishing: os._exit, closed fds


def _consider(ev: _Evidence, index: int, arrived: float, message: dict[str, Any]) -> None:
    kind = message.get("type")
    if kind == wire.SANDBOX:
        if index != 0:  # only the first, written before any candidate code could write
            ev.note("forged_message", "a sandbox message arrived after candidate code ran")
        elif (problem := wire.problem(message)) is not None:
            ev.note("malformed_message", problem)
        else:
            ev.sandbox = {k: v for k, v in message.items() if k != "type"}
        return
    if ev.finish is not None:
        ev.note(
            "message_after_finish", f"a {str(kind)[:40]!r} message arrived after pytest finished"
        )
        return
    problem = wire.problem(message)
    handler = _HANDLERS.get(str(kind))
    if problem is not None or handler is None:
        ev.note("malformed_message", problem or f"a {str(kind)[:40]!r} message from the child")
        return
    handler(ev, arrived, message)


def _on_collect_error(ev: _Evidence, arrived: float, message: dict[str, Any]) -> None:
    nodeid, text = message["nodeid"], message["message"]
    if len(ev.collection_errors) < MAX_COLLECTION_ERRORS:
        error = CollectionError(bound_message(nodeid, 300), bound_message(text))
        ev.collection_errors.append(error)
    else:
        ev.collection_errors_dropped += 1


def _on_collected(ev: _Evidence, arrived: float, message: dict[str, Any]) -> None:
    extra = [i for i in message["ids"] if i not in ev.expected]
    if extra:
        ev.note("unexpected_test", f"collected tests nobody expected: {extra[:3]}")
    ev.last_end = max(ev.last_end, arrived)
    if ev.collected_at is None:
        ev.collected_at = arrived


def _on_anchor(ev: _Evidence, arrived: float, message: dict[str, Any]) -> None:
    anchor = Anchor.from_wire(message)
    # Attributed to the test the parent saw start, whatever the message claims.
    if anchor is None or ev.current is None:
        ev.note("malformed_message", "an anchored value outside a test, or mistyped")
        return
    ev.anchors.setdefault(ev.current, []).append(anchor)
    if anchor.not_plain is not None:
        ev.find(
            "anchor_not_plain",
            f"{ev.current[:200]} anchored a {anchor.not_plain[:80]}, not a plain value",
        )


def _on_finding(ev: _Evidence, arrived: float, message: dict[str, Any]) -> None:
    code, detail = message["code"], message["detail"]
    if _CODE.fullmatch(code):
        ev.find(code, detail)
    else:
        ev.note("malformed_message", "a finding with a malformed code")


def _on_finish(ev: _Evidence, arrived: float, message: dict[str, Any]) -> None:
    ev.finish = message["exitstatus"]


def _on_session_error(ev: _Evidence, arrived: float, message: dict[str, Any]) -> None:
    kind = message["type"]
    reason = bound_message(str(message.get("reason", message.get("of", ""))), _REASON_CHARS)
    ev.session_error = ev.session_error or _describe_event(kind, reason)


def _on_control(ev: _Evidence, arrived: float, message: dict[str, Any]) -> None:
    ev.note("forged_message", "a control message arrived on the message pipe")


def _consider_report(ev: _Evidence, arrived: float, message: dict[str, Any]) -> None:
    rep = _parse_report(message)
    if rep is None:
        ev.note("malformed_message", "a report with missing or mistyped fields")
        return
    if rep.nodeid not in ev.expected:
        ev.note("unexpected_test", f"a report for a test nobody expected: {rep.nodeid[:200]}")
        return
    if not rep.subtest:
        key = (rep.nodeid, rep.when)
        if key in ev.seen:
            ev.note("duplicate_report", f"{rep.when} of {rep.nodeid[:200]} reported twice")
            return
        if _WHEN.index(rep.when) > 0 and (rep.nodeid, "setup") not in ev.seen:
            ev.note("phase_out_of_order", f"{rep.when} of {rep.nodeid[:200]} before its setup")
            return
        ev.seen.add(key)
    # Parent clock: a test's span runs from the end of the previous test to its last report.
    if rep.when == "setup" and not rep.subtest:
        ev.current = rep.nodeid
    ev.spans[rep.nodeid] = round(arrived - ev.last_end + ev.spans.get(rep.nodeid, 0.0), 6)
    if not rep.subtest:
        ev.child_tests_s += rep.duration
    ev.last_end = arrived
    if rep.when == "teardown":
        ev.current = None
    ev.tracker.add(
        PhaseReport(
            nodeid=rep.nodeid,
            when=rep.when,
            outcome=rep.outcome,
            duration=rep.duration,
            message=rep.message,
            wasxfail=rep.wasxfail,
            subtest=rep.subtest,
            heldout=ev.expected[rep.nodeid],  # the trusted collection decides, not the child
        )
    )


def _parse_report(m: dict[str, Any]) -> PhaseReport | None:
    # Field types are the wire table's, checked by wire.problem() already; what is left are
    # the values.
    when, outcome, duration = m["when"], m["outcome"], m["duration"]
    if when not in _WHEN or outcome not in _PYTEST_OUTCOMES or not 0 <= duration < math.inf:
        return None
    return PhaseReport(
        nodeid=m["nodeid"],
        when=when,
        outcome=outcome,
        duration=float(duration),
        message=bound_message(m.get("message", "")),
        wasxfail=m.get("wasxfail", False),
        subtest=m.get("subtest", False),
    )


def _describe_event(kind: str, reason: str) -> str:
    return {
        wire.INTERRUPTED: f"session interrupted ({reason})",
        wire.INTERNAL_ERROR: f"pytest internal error: {reason}",
        wire.CHILD_ERROR: f"pytest could not run: {reason}",
        wire.SANDBOX_ERROR: f"sandbox setup failed: {reason}",
        wire.OVERSIZE: f"the child sent an oversized {reason!r} message",
    }[kind]


#: One handler per message kind of the wire vocabulary (a test checks none is missing).
_HANDLERS: dict[str, Callable[[_Evidence, float, dict[str, Any]], None]] = {
    wire.REPORT: _consider_report,
    wire.COLLECT_ERROR: _on_collect_error,
    wire.COLLECTED: _on_collected,
    wire.ANCHOR: _on_anchor,
    wire.FINDING: _on_finding,
    wire.FINISH: _on_finish,
    wire.INTERRUPTED: _on_session_error,
    wire.INTERNAL_ERROR: _on_session_error,
    wire.CHILD_ERROR: _on_session_error,
    wire.SANDBOX_ERROR: _on_session_error,
    wire.OVERSIZE: _on_session_error,
    wire.CTL: _on_control,
}


def _session_error(ev: _Evidence, observed: ChildOutcome, timeout_s: float) -> str | None:
    if observed.stopped is not None:
        return f"the run was stopped by scorewright, not by the candidate: {observed.stopped}"
    if observed.timed_out:
        where = f" while running {ev.current}" if ev.current else ""
        return f"timed out after {timeout_s:.1f}s{where}"
    if observed.channel_error is not None:
        return f"message channel broken: {observed.channel_error}"
    if ev.collection_errors:
        first = ev.collection_errors[0]
        last_line = first.message.strip().splitlines()[-1] if first.message.strip() else ""
        count = len(ev.collection_errors) + ev.collection_errors_dropped
        return (
            f"{count} test file(s) could not be collected with the "
            f"candidate; first: {first.nodeid}: {bound_message(last_line, 300)}"
        )
    if ev.session_error is not None:
        return ev.session_error
    if observed.signal is not None:
        return f"the test process was killed by {_signal_name(observed.signal)}"
    if ev.finish is None:
        code = observed.exit_code
        return f"the test process exited before pytest finished (exit status {code})"
    if ev.finish not in (0, 1):
        return f"pytest ended with exit status {ev.finish}"
    return None


def _signal_name(number: int) -> str:
    try:
        name = _signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
    hint = {
        "SIGXCPU": " (CPU time limit exceeded)",
        "SIGKILL": " (a resource limit, or killed from outside)",
        "SIGSEGV": " (segmentation fault)",
        "SIGXFSZ": " (file size limit exceeded)",
    }.get(name, "")
    return name + hint


def _with_parent_duration(record: TestRecord, span: float | None) -> TestRecord:
    return TestRecord(
        nodeid=record.nodeid,
        outcome=record.outcome,
        phase=record.phase,
        heldout=record.heldout,
        duration_s=span if record.duration_s is not None else None,
        message=record.message,
        subtests=record.subtests,
    )
