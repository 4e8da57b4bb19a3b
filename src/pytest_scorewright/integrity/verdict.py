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

The monitor's findings are attributed here to the test the parent saw running (never to what
a message claims), so that integrity/relative.py can set them against what the reference did
in the same test; passing assertions are re-checked on decoded operands (integrity/
recheck.py); and the monitor must answer the reporter's end-of-test audit event with state
that matches what the parent received, or the run counts as tampered with.
"""

from __future__ import annotations

import dataclasses
import math
import re
import signal as _signal
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pytest_scorewright._text import bound_message, clean, error_line
from pytest_scorewright.integrity import recheck_evidence as recheck
from pytest_scorewright.integrity.anchor_evidence import matches
from pytest_scorewright.integrity.codes import CODES, reason
from pytest_scorewright.protocol import wire
from pytest_scorewright.protocol.wire import Anchor, ChildOutcome, PhaseReport
from pytest_scorewright.result import Benchmark, CollectionError, Reason, TestRecord
from pytest_scorewright.results.outcomes import OutcomeTracker

_WHEN = ("setup", "call", "teardown")
_CODE = re.compile(r"[a-z][a-z0-9_]{0,40}")
_ESCAPE = re.compile(r"SystemExit|KeyboardInterrupt|\bExit: |outcomes\.Exit")
_PYTEST_OUTCOMES = ("passed", "failed", "skipped")


#: How a run ended, as the parent saw it.
Ending = Literal[
    "finished", "timeout", "crash", "early_exit", "import_error", "channel_broken", "stopped"
]

#: Findings filed from one run (one per test and code; the codes are the table's): past it
#: they are counted, not kept, whatever a child in process with the candidate sends.
MAX_FINDINGS = 5000
#: Collection errors kept from one run; the rest are counted.
MAX_COLLECTION_ERRORS = 100
#: Longest session error text kept from the child (an interrupt's reason, say).
_REASON_CHARS = 1000
#: ``SystemExit`` raised while the candidate was imported: with status 0 (or none) it is the
#: exit-with-success trick; any other status is a script that exited, an honest failure.
#: (The child's reporter adds where it was raised: ``SystemExit: 0 (raised at x.py:3 in f)``.)
_SYSTEM_EXIT = re.compile(r"SystemExit(?::\s*(.*?))?(?:\s*\(raised at [^()]*\))?$", re.M)
#: Where findings outside any test are filed: while test modules (and so the candidate) were
#: imported, and after the last test.
COLLECTION, SESSION = "<collection>", "<session>"
#: Re-checked operands kept per run, beyond which the parent only evaluates (bounded memory).
MAX_RECHECK_KEYS = 100_000
#: Benchmarks' timed rounds may claim this much more than the parent's clock allows (both
#: clocks are CLOCK_MONOTONIC; this is rounding and the stamp of the run's start).
BENCH_SLACK_S = 0.005
#: A benchmark whose per-call times have a coefficient of variation above this is noisy.
NOISY_CV = 1.0
#: A benchmark's candidate processes may use this multiple of its timed rounds' time in CPU,
#: and this much more (/proc counts in 10 ms ticks), before it is work off the clock.
OFF_CLOCK_RATIO = 1.25
OFF_CLOCK_SLACK_S = 0.02


@dataclass(frozen=True)
class Submission:
    """A value a test submitted for an objective (``scorewright.submit``), decoded, filed
    under the test the parent saw running."""

    test: str
    name: str
    value: Any


@dataclass(frozen=True)
class Finding:
    """A monitor finding, filed under the test the parent saw running (or COLLECTION,
    SESSION)."""

    test: str
    code: str
    detail: str


@dataclass(frozen=True)
class NotPlain:
    """A passing assertion's operand that was not plain data."""

    type_name: str
    own: bool


#: (test, assertion site, operand index): an assertion operand's place.
SideKey = tuple[str, str, int]
#: (test, assertion site): where an impossible canary was tried.
CanaryKey = tuple[str, str]


@dataclass(frozen=True)
class Canary:
    """Impossible canaries tried at one place: the comparison, and whether any held."""

    op: str
    passed: bool


@dataclass(frozen=True)
class RunTiming:
    """Parent-clock timing of one run, and the child's own sum of test durations."""

    collected_s: float | None  # from fork to the end of collection (imports included)
    tests_s: float  # from the end of collection to the last report
    child_tests_s: float  # what pytest in the child says the tests took
    #: The test process's own CPU to the end of collection, as it says (None: not said).
    collected_cpu_s: float | None = None


@dataclass
class RunVerdict:
    records: list[TestRecord]
    error: str | None
    reasons: list[Reason] = field(default_factory=list)
    collection_errors: list[CollectionError] = field(default_factory=list)
    sandbox: dict[str, Any] = field(default_factory=dict)
    finished: bool = False
    ending: Ending = "finished"
    findings: list[Finding] = field(default_factory=list)
    timing: RunTiming = field(default_factory=lambda: RunTiming(None, 0.0, 0.0))
    #: Anchored values by test, as received (the reference run's become the expectations).
    anchors: dict[str, list[Anchor]] = field(default_factory=dict)
    #: Re-checked operands: True where every one received at that place was plain data.
    plain: dict[SideKey, bool] = field(default_factory=dict)
    #: The first non-plain operand at each place where one was received.
    not_plain: dict[SideKey, NotPlain] = field(default_factory=dict)
    #: Impossible canaries by place (child/test_process/canaries.py; integrity/relative.py judges
    #: them).
    canaries: dict[CanaryKey, Canary] = field(default_factory=dict)
    #: Test modules that announced the trusted (instrumented) bytecode.
    instrumented: set[str] = field(default_factory=set)
    #: Values submitted for objectives, in arrival order.
    submissions: list[Submission] = field(default_factory=list)
    #: Each fresh-argument benchmark's round prints (child/test_process/timed_results.py), by test.
    timed_prints: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: With coverage: the lines of the candidate's files its process claims ran, as
    #: ``'1-3,7'`` ranges by relative path (results/candidate_coverage.py decides).
    coverage: dict[str, str] | None = None


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
    findings: dict[tuple[str, str], Finding] = field(default_factory=dict)
    findings_dropped: int = 0
    collection_errors_dropped: int = 0
    collected_at: float | None = None
    collected_cpu_s: float | None = None
    child_tests_s: float = 0.0
    anchors: dict[str, list[Anchor]] = field(default_factory=dict)
    #: Findings and re-checks that arrived between tests: the next test's setup made them.
    pending: list[tuple[str, str]] = field(default_factory=list)
    pending_rechecks: list[dict[str, Any]] = field(default_factory=list)
    monitored: bool = False
    canary_state: str | None = None
    canaried: set[str] = field(default_factory=set)
    finding_messages: int = 0
    test_finding_messages: int = 0
    plain: dict[SideKey, bool] = field(default_factory=dict)
    not_plain: dict[SideKey, NotPlain] = field(default_factory=dict)
    canaries: dict[CanaryKey, Canary] = field(default_factory=dict)
    instrumented: set[str] = field(default_factory=set)
    #: Tests with a passing assertion that does not hold when re-checked: failed at the end.
    broken: dict[str, str] = field(default_factory=dict)
    benchmarks: dict[str, Benchmark] = field(default_factory=dict)
    #: Timed rounds claimed by the benchmarks so far, in seconds.
    bench_claimed: float = 0.0
    submissions: list[Submission] = field(default_factory=list)
    timed_prints: dict[str, tuple[str, ...]] = field(default_factory=dict)
    coverage: dict[str, str] | None = None

    def note(self, code: str, detail: str, times: int = 1) -> None:
        # One reason per code, with a count: a flood of forged reports is one finding.
        self.counts[code] = self.counts.get(code, 0) + times
        if self.counts[code] == times:
            self.reasons.append(reason(code, bound_message(detail, 300)))

    def file_finding(self, test: str, code: str, detail: str) -> None:
        key = (test, code)
        if key in self.findings:
            return
        if len(self.findings) < MAX_FINDINGS:
            self.findings[key] = Finding(test, code, detail)
        else:
            self.findings_dropped += 1


def judge(
    expected: Sequence[tuple[str, bool]],
    observed: ChildOutcome,
    *,
    timeout_s: float,
    reference_anchors: Mapping[str, Sequence[Anchor]] | None = None,
    monitored: bool = False,
) -> RunVerdict:
    """Decide every expected test's outcome from what the parent observed; with
    ``reference_anchors``, anchored values are compared here, in the parent. ``monitored``:
    the run had the runtime monitor, which must answer at the end of every test."""
    ev = _Evidence(expected=dict(expected), tracker=OutcomeTracker(), monitored=monitored)
    ev.tracker.expect_all(expected)
    for index, (arrived, message) in enumerate(observed.messages):
        _consider(ev, index, arrived, message)
    for code, detail in ev.pending:  # after the last test: the session's final checks
        ev.file_finding(SESSION, code, detail)
    for waiting in ev.pending_rechecks:
        _recheck_in(ev, SESSION, waiting)
    for nodeid, why in ev.broken.items():  # after the stream: its reports must not undo it
        ev.tracker.fail(nodeid, why)
    if reference_anchors is not None:
        _compare_anchors(ev, reference_anchors)
    error = _session_error(ev, observed, timeout_s)
    error = clean(error) if error is not None else None  # it quotes what the child sent
    if error is not None and ev.current is not None:
        ev.tracker.interrupt(
            ev.current,
            "timeout" if observed.timed_out else "error",
            f"the run ended during this test: {error}",
        )
    records = [
        _with_parent_duration(record, ev.spans.get(record.nodeid), ev.benchmarks.get(record.nodeid))
        for record in ev.tracker.records()
        if record.nodeid in ev.expected
    ]
    records = _say_why_not_run(records)
    if ev.findings_dropped:
        ev.note(
            "findings_capped",
            f"{ev.findings_dropped} more finding(s) past the first {MAX_FINDINGS} were "
            "counted, not kept",
        )
    for code, count in ev.counts.items():
        if count > 1:
            ev.reasons = [
                Reason(r.code, f"{r.detail} (x{count})", r.severity) if r.code == code else r
                for r in ev.reasons
            ]
    start = ev.collected_at or 0.0
    return RunVerdict(
        records=records,
        error=error,
        reasons=ev.reasons,
        collection_errors=ev.collection_errors,
        sandbox=ev.sandbox,
        finished=ev.finish is not None,
        ending=_ending(ev, observed, error),
        findings=list(ev.findings.values()),
        anchors=ev.anchors,
        plain=ev.plain,
        not_plain=ev.not_plain,
        canaries=ev.canaries,
        instrumented=ev.instrumented,
        submissions=ev.submissions,
        timed_prints=ev.timed_prints,
        coverage=ev.coverage,
        timing=RunTiming(
            collected_s=ev.collected_at,
            tests_s=round(max(ev.last_end - start, 0.0), 6),
            child_tests_s=round(ev.child_tests_s, 6),
            collected_cpu_s=ev.collected_cpu_s,
        ),
    )


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


def _ending(ev: _Evidence, observed: ChildOutcome, error: str | None) -> Ending:
    if error is None:
        return "finished"
    if observed.stopped is not None:
        return "stopped"
    if observed.timed_out:
        return "timeout"
    if observed.channel_error is not None:
        return "channel_broken"
    texts = [ev.session_error or ""] + [c.message for c in ev.collection_errors]
    exits = [m.group(1) or "" for m in map(_SYSTEM_EXIT.search, texts) if m is not None]
    if exits and all(status.strip() not in ("", "0", "None") for status in exits):
        return "import_error"  # a script's sys.exit(2) while imported: an honest failure
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
        cpu = message.get("cpu_s")
        if isinstance(cpu, int | float) and 0.0 <= cpu < float("inf"):
            ev.collected_cpu_s = float(cpu)


def _on_anchor(ev: _Evidence, arrived: float, message: dict[str, Any]) -> None:
    anchor = Anchor.from_wire(message)
    # Attributed to the test the parent saw start, whatever the message claims.
    if anchor is None or ev.current is None:
        ev.note("malformed_message", "an anchored value outside a test, or mistyped")
        return
    ev.anchors.setdefault(ev.current, []).append(anchor)
    if anchor.not_plain is not None:
        ev.note(
            "anchor_not_plain",
            f"{ev.current[:200]} anchored a {anchor.not_plain[:80]}, not a plain value",
        )


#: The length of one round print (two 128-bit digests in hex).
_ROUND_PRINT = 65


def _on_benchmark(ev: _Evidence, arrived: float, message: dict[str, Any]) -> None:
    """A test's benchmark figures: one per test, consistent, and (with every benchmark before
    it) no more timed rounds than the run has been going on the parent's clock."""
    test = ev.current
    if test is None:
        ev.note("malformed_message", "benchmark figures outside a test")
        return
    figures = {k: message[k] for k in wire.VOCABULARY[wire.BENCHMARK].fields}
    problem = None
    if test in ev.benchmarks:
        problem = "a second benchmark in one test (the fixture times once)"
    elif figures["rounds"] < 1 or figures["iterations"] < 1:
        problem = "a benchmark of no rounds"
    elif not all(
        math.isfinite(v) and v >= 0 for k, v in figures.items() if k.endswith("_s")
    ) or not (figures["min_s"] <= figures["median_s"] <= figures["total_s"] + BENCH_SLACK_S):
        problem = "benchmark figures that do not fit together (min, median, total)"
    else:
        ev.bench_claimed += figures["total_s"]
        # Every timed round ran after the run started and before this message arrived; the
        # parent's stamps are late, never early, so this holds however loaded the machine.
        if ev.bench_claimed > arrived + BENCH_SLACK_S:
            problem = (
                f"benchmarks claim {ev.bench_claimed:.3f}s of timed rounds by the end of "
                f"{test[:200]}, but the run had been going {arrived:.3f}s on the parent's clock"
            )
    if problem is not None:
        ev.note("benchmark_forged", f"{test[:200]}: {problem}")
        return
    cpu = message.get("cpu_total_s")
    calls = figures["rounds"] * figures["iterations"]
    if cpu is not None and cpu > OFF_CLOCK_RATIO * figures["total_s"] + OFF_CLOCK_SLACK_S:
        # On one CPU the candidate's process cannot spend more CPU than the rounds took,
        # unless it worked between them or after them: that speed is not the call's.
        ev.note(
            "work_off_the_clock",
            f"{test[:200]}: the candidate's processes used {cpu:.3f}s of CPU over timed "
            f"rounds of {figures['total_s']:.3f}s: no speed credited",
        )
        return
    ev.benchmarks[test] = Benchmark(
        median_s=round(float(figures["median_s"]), 9),
        min_s=round(float(figures["min_s"]), 9),
        iqr_s=round(float(figures["iqr_s"]), 9),
        rounds=figures["rounds"],
        iterations=figures["iterations"],
        overhead_s=round(float(figures["overhead_s"]), 9),
        first_s=round(float(figures["first_s"]), 9),
        cpu_s=round(float(cpu) / calls, 9) if cpu is not None else None,
    )
    prints = message.get("rounds_printed")
    if prints is not None:
        if len(prints) > wire.MAX_ROUND_PRINTS or any(len(p) > _ROUND_PRINT for p in prints):
            ev.note("malformed_message", f"{test[:200]}: more round prints than are sent")
        else:
            ev.timed_prints[test] = tuple(prints)
    mean, stdev = figures["mean_s"], figures["stdev_s"]
    if figures["rounds"] >= 5 and mean > 0 and stdev / mean > NOISY_CV:
        ev.note(
            "benchmark_noisy",
            f"{test[:200]}: per-call times vary by {stdev / mean:.0%} of their mean over "
            f"{figures['rounds']} rounds (a loaded machine, or a candidate that varies)",
        )


def _on_submit(ev: _Evidence, arrived: float, message: dict[str, Any]) -> None:
    # Attributed to the test the parent saw start, whatever the message claims.
    name = message["name"]
    if ev.current is None or not _CODE.fullmatch(name) or "value" not in message:
        ev.note("malformed_message", "a submitted value outside a test, or badly named")
        return
    try:
        value = recheck.decode(message["value"])
    except (recheck.Undecodable, RecursionError) as exc:
        ev.note("malformed_message", f"a submitted value that cannot be read: {exc}")
        return
    ev.submissions.append(Submission(ev.current, name, value))


def _on_finding(ev: _Evidence, arrived: float, message: dict[str, Any]) -> None:
    code, detail = message["code"], message["detail"]
    ev.finding_messages += 1
    ev.test_finding_messages += 1
    if not _CODE.fullmatch(code) or CODES.get(code, None) is None:
        # Our monitor sends only codes of the table: anything else was written by someone else.
        ev.note("malformed_message", f"a finding of a code the monitor never sends: {code[:40]!r}")
        return
    detail = bound_message(detail, 300)
    if ev.current is not None:
        ev.file_finding(ev.current, code, detail)
    elif ev.collected_at is None:
        ev.file_finding(COLLECTION, code, detail)
    else:
        ev.pending.append((code, detail))


def _on_canary(ev: _Evidence, arrived: float, message: dict[str, Any]) -> None:
    """The monitor's answer at the end of a test: it must come once per test, with a count of
    findings that matches what arrived and the state it was armed with (which it announced
    when collection started, before any candidate code was imported)."""
    test = ev.current
    problem = None
    baseline = test is None and ev.collected_at is None and ev.canary_state is None
    if test is None and not baseline:
        problem = "a monitor answer outside a test"
    elif message["busy"]:
        problem = f"the monitor was left busy (disabled) by the end of {str(test)[:200]}"
    elif message["sent"] != ev.finding_messages:
        problem = (
            f"the monitor says it sent {message['sent']} finding(s); {ev.finding_messages} "
            "arrived: its counters were changed"
        )
    elif message["test_findings"] != ev.test_finding_messages:
        problem = f"the monitor's record of findings in {str(test)[:200]} was changed"
    elif ev.canary_state is not None and message["state"] != ev.canary_state:
        problem = "the monitor's armed state (handlers, snapshots, channel) was changed"
    ev.canary_state = ev.canary_state or message["state"]
    ev.test_finding_messages = 0
    if problem is not None:
        ev.note("monitor_silenced", problem)
    elif test is not None:
        ev.canaried.add(test)


def _on_recheck(ev: _Evidence, arrived: float, message: dict[str, Any]) -> None:
    if ev.current is not None:
        _recheck_in(ev, ev.current, message)
    elif ev.collected_at is None:  # an assert at a test module's top level
        _recheck_in(ev, COLLECTION, message)
    else:  # a fixture's assert while the next test is set up
        ev.pending_rechecks.append(message)


#: The operand index of what is not an assertion's operand.
_PLACES = {"returned": recheck.RETURNED, "given": recheck.GIVEN}


def _recheck_in(ev: _Evidence, test: str, message: dict[str, Any]) -> None:
    site, op = message["site"][:200], message["op"]
    if op not in recheck.OPS:
        ev.note("malformed_message", f"a re-checked assertion of no known comparison {op[:20]!r}")
        return
    try:
        sides = [recheck.read_side(raw) for raw in message["sides"]]
        if len(sides) != recheck.ARITY[op]:
            raise recheck.Undecodable("the wrong number of operands")
    except recheck.Undecodable as exc:
        ev.note("malformed_message", f"a re-checked assertion that cannot be read: {exc}")
        return
    _canary_in(ev, (test, site), op, message.get("canary"))
    for index, side in enumerate(sides):
        if side.skipped:
            continue
        key = (test, site, _PLACES.get(op, index))
        if key not in ev.plain and len(ev.plain) >= MAX_RECHECK_KEYS:
            continue
        ev.plain[key] = ev.plain.get(key, True) and side.plain
        if not side.plain:
            ev.not_plain.setdefault(key, NotPlain(side.type_name, side.own))
    if recheck.holds(op, sides) is False:
        where = f"{site} ({op})"
        ev.broken.setdefault(
            test, f"re-checked in the parent: the assertion at {where} does not hold"
        )
        ev.note(
            "assertion_recheck_failed",
            f"{test[:200]}: the assertion at {where} passed in the run but its operands do not "
            "satisfy it",
        )


def _canary_in(ev: _Evidence, key: CanaryKey, op: str, passed: bool | None) -> None:
    """Any pass at a place counts: the reference must fail every one to make it a canary."""
    if passed is None or (key not in ev.canaries and len(ev.canaries) >= MAX_RECHECK_KEYS):
        return
    before = ev.canaries.get(key)
    ev.canaries[key] = Canary(op, passed or (before is not None and before.passed))


def _on_instrumented(ev: _Evidence, arrived: float, message: dict[str, Any]) -> None:
    ev.instrumented.add(message["module"][:300])


def _on_coverage(ev: _Evidence, arrived: float, message: dict[str, Any]) -> None:
    files, lines = message["files"], message["lines"]
    if ev.coverage is not None or len(files) != len(lines):
        ev.note("malformed_message", "a second or uneven coverage message")
        return
    # Relative paths inside the candidate's directory only; the rest is no claim.
    ev.coverage = {
        f: n
        for f, n in zip(files, lines, strict=True)
        if f and not f.startswith("/") and ".." not in f.split("/")
    }


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
        for code, detail in ev.pending:  # raised while this test was being set up
            ev.file_finding(rep.nodeid, code, detail)
        ev.pending.clear()
        for waiting in ev.pending_rechecks:
            _recheck_in(ev, rep.nodeid, waiting)
        ev.pending_rechecks.clear()
    if (
        rep.when == "teardown"
        and not rep.subtest
        and ev.monitored
        and rep.nodeid not in ev.canaried
    ):
        ev.note(
            "monitor_silenced",
            f"the monitor did not answer at the end of {rep.nodeid[:200]}: disabled",
        )
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
            cpu=rep.cpu,
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
        cpu=cpu if isinstance(cpu := m.get("cpu"), float) and 0 <= cpu < math.inf else None,
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
    wire.BENCHMARK: _on_benchmark,
    wire.SUBMIT: _on_submit,
    wire.FINDING: _on_finding,
    wire.CANARY: _on_canary,
    wire.RECHECK: _on_recheck,
    wire.INSTRUMENTED: _on_instrumented,
    wire.COVERAGE: _on_coverage,
    wire.FINISH: _on_finish,
    wire.INTERRUPTED: _on_session_error,
    wire.INTERNAL_ERROR: _on_session_error,
    wire.CHILD_ERROR: _on_session_error,
    wire.SANDBOX_ERROR: _on_session_error,
    wire.OVERSIZE: _on_session_error,
    wire.CTL: _on_control,
}


#: pytest's wrapper around a test module's import failure, before the candidate's own error.
_IMPORT_WRAPPED = re.compile(r"^ImportError: (?=(SyntaxError|IndentationError|TabError)\b)")


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
        last_line = _IMPORT_WRAPPED.sub("", error_line(first.message))
        count = len(ev.collection_errors) + ev.collection_errors_dropped
        return (
            f"{count} test file(s) could not import the candidate; first: "
            f"{first.nodeid}: {bound_message(last_line, 300)}"
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


def _say_why_not_run(records: list[TestRecord]) -> list[TestRecord]:
    """After wire.MAX_TIMEOUTS timeouts and no test passed, the run stops
    (child/test_process/reporter.py): the tests it left say so, so a hang reads as one, not as a
    crash."""
    timeouts = sum(r.outcome == "timeout" for r in records)
    if timeouts < wire.MAX_TIMEOUTS or any(r.outcome == "passed" for r in records):
        return records
    why = (
        f"not run: the run stopped after {timeouts} tests timed out and none passed "
        "(a hang costs seconds)"
    )
    return [
        dataclasses.replace(r, message=why) if r.outcome == "not_run" and not r.message else r
        for r in records
    ]


def _with_parent_duration(
    record: TestRecord, span: float | None, benchmark: Benchmark | None = None
) -> TestRecord:
    return TestRecord(
        nodeid=record.nodeid,
        outcome=record.outcome,
        phase=record.phase,
        heldout=record.heldout,
        duration_s=span if record.duration_s is not None else None,
        message=record.message,
        subtests=record.subtests,
        benchmark=benchmark,
        cpu_s=record.cpu_s,
    )
