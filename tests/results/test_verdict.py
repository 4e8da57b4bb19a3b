"""The parent's verdict and the frame reader on their own: messages in, records out, no fork.

These are the fast tests of the rules the sandbox tests show end to end: a report is evidence,
the trusted collection decides what is expected, and malformed or forged messages become
reasons, never passes.
"""

from __future__ import annotations

import json
import struct
from typing import Any

import pytest

from pytest_scorewright.integrity.verdict import judge
from pytest_scorewright.protocol import wire
from pytest_scorewright.protocol.channel import FrameReader, encode_frame
from pytest_scorewright.protocol.wire import Anchor, ChildOutcome

EXPECTED = [("t.py::test_a", False), ("t.py::test_b", False), ("h.py::test_h", True)]


def _report(nodeid: str, when: str, outcome: str = "passed", **extra: Any) -> dict[str, Any]:
    return {
        "type": wire.REPORT,
        "nodeid": nodeid,
        "when": when,
        "outcome": outcome,
        "duration": 0.01,
        "message": "",
        **extra,
    }


def _passing(nodeid: str) -> list[dict[str, Any]]:
    return [_report(nodeid, when) for when in ("setup", "call", "teardown")]


def _outcome(*messages: dict[str, Any], **fields: Any) -> ChildOutcome:
    stream = [{"type": wire.SANDBOX, "uid": None}, *messages]
    return ChildOutcome(messages=[(0.1 * i, m) for i, m in enumerate(stream)], **fields)


def _finished(*messages: dict[str, Any]) -> ChildOutcome:
    return _outcome(*messages, {"type": wire.FINISH, "exitstatus": 0}, exit_code=0)


def _outcomes(verdict: Any) -> dict[str, str]:
    return {r.nodeid: r.outcome for r in verdict.records}


def _codes(verdict: Any) -> set[str]:
    return {r.code for r in verdict.reasons}


def test_reported_passes_are_passes_and_held_out_comes_from_the_collection() -> None:
    messages = [m for n, _ in EXPECTED for m in _passing(n)]
    messages[6] = {**messages[6], "heldout": False}  # the child's word does not count
    verdict = judge(EXPECTED, _finished(*messages), timeout_s=5)
    assert verdict.error is None
    assert verdict.ending == "finished"
    assert set(_outcomes(verdict).values()) == {"passed"}
    assert [r.heldout for r in verdict.records] == [False, False, True]


def test_a_test_never_reported_did_not_pass_and_the_early_end_is_the_error() -> None:
    verdict = judge(EXPECTED, _outcome(*_passing("t.py::test_a"), exit_code=0), timeout_s=5)
    assert _outcomes(verdict) == {
        "t.py::test_a": "passed",
        "t.py::test_b": "not_run",
        "h.py::test_h": "not_run",
    }
    assert verdict.ending == "early_exit"
    assert "exited before pytest finished" in (verdict.error or "")


def test_reports_for_unknown_tests_repeats_and_phases_out_of_order_are_reasons() -> None:
    stream = [
        *_passing("t.py::test_a"),
        _report("t.py::test_a", "call"),  # a repeat
        _report("t.py::forged", "call"),  # nobody expected it
        _report("t.py::test_b", "call"),  # no setup first
    ]
    verdict = judge(EXPECTED, _finished(*stream), timeout_s=5)
    assert {"duplicate_report", "unexpected_test", "phase_out_of_order"} <= _codes(verdict)
    assert _outcomes(verdict)["t.py::test_b"] == "not_run"


def test_messages_after_the_finish_and_late_sandbox_messages_are_forgeries() -> None:
    stream = [
        *_passing("t.py::test_a"),
        {"type": wire.SANDBOX, "uid": 0},
        {"type": wire.FINISH, "exitstatus": 0},
        *_passing("t.py::test_b"),
    ]
    verdict = judge(EXPECTED, _outcome(*stream, exit_code=0), timeout_s=5)
    assert {"forged_message", "message_after_finish"} <= _codes(verdict)
    assert _outcomes(verdict)["t.py::test_b"] == "not_run"


def test_unknown_and_mistyped_messages_are_malformed_never_passes() -> None:
    stream = [
        {"type": "flip_everything"},
        {**_report("t.py::test_a", "call"), "duration": "fast"},
        {"type": wire.FINDING, "code": 7, "detail": "x"},
        {"type": wire.CTL, "mode": "namespaces"},
    ]
    verdict = judge(EXPECTED, _finished(*stream), timeout_s=5)
    assert {"malformed_message", "forged_message"} <= _codes(verdict)
    assert "passed" not in _outcomes(verdict).values()


def test_a_timeout_fails_the_running_test_and_names_it() -> None:
    stream = [*_passing("t.py::test_a"), _report("t.py::test_b", "setup")]
    verdict = judge(EXPECTED, _outcome(*stream, timed_out=True), timeout_s=2)
    assert _outcomes(verdict)["t.py::test_b"] == "timeout"
    assert verdict.error == "timed out after 2.0s while running t.py::test_b"
    assert verdict.ending == "timeout"


def test_durations_are_the_parents_clock_not_the_childs() -> None:
    slow_claim = [_report("t.py::test_a", w, duration=999.0) for w in ("setup", "call")]
    verdict = judge(EXPECTED, _finished(*slow_claim), timeout_s=5)
    record = next(r for r in verdict.records if r.nodeid == "t.py::test_a")
    assert record.duration_s is not None
    assert record.duration_s < 1.0
    assert verdict.timing.child_tests_s == 1998.0


def test_an_anchored_value_that_differs_from_the_references_fails_the_test() -> None:
    reference = {"t.py::test_a": [Anchor(3, "d-ref")]}
    anchor = {"type": wire.ANCHOR, **Anchor(4, "d-cand").to_wire()}
    stream = [_report("t.py::test_a", "setup"), anchor, *_passing("t.py::test_a")[1:]]
    verdict = judge(EXPECTED, _finished(*stream), timeout_s=5, reference_anchors=reference)
    assert _outcomes(verdict)["t.py::test_a"] == "failed"


def test_findings_from_the_monitor_are_kept_once_per_code_and_test() -> None:
    finding = {"type": wire.FINDING, "code": "frame_introspection", "detail": "sol.py:3"}
    verdict = judge(EXPECTED, _finished(finding, finding), timeout_s=5)
    assert [f.code for f in verdict.findings] == ["frame_introspection"]


def _canary(sent: int, in_test: int, *, busy: bool = False, state: str = "s1") -> dict[str, Any]:
    return {
        "type": wire.CANARY,
        "sent": sent,
        "test_findings": in_test,
        "busy": busy,
        "state": state,
    }


def _finding(code: str, detail: str = "sol.py:3") -> dict[str, Any]:
    return {"type": wire.FINDING, "code": code, "detail": detail}


def _monitored_test(nodeid: str, *inside: dict[str, Any], canary: dict[str, Any]) -> list[Any]:
    return [
        _report(nodeid, "setup"),
        *inside,
        _report(nodeid, "call"),
        canary,
        _report(nodeid, "teardown"),
    ]


def test_findings_are_filed_under_the_test_the_parent_saw_running() -> None:
    stream = [
        _finding("reads_tests", "at import"),  # while collecting: the candidate's import
        {"type": wire.COLLECTED, "ids": [n for n, _ in EXPECTED], "heldout": [False] * 3},
        *_monitored_test("t.py::test_a", _finding("gc_introspection"), canary=_canary(2, 2)),
        _finding("frame_introspection"),  # between tests: the next one's setup raised it
        *_monitored_test("t.py::test_b", canary=_canary(3, 1)),
        _finding("background_threads"),  # after the last test: the session's final checks
    ]
    verdict = judge(EXPECTED, _finished(*stream), timeout_s=5, monitored=True)
    assert {(f.test, f.code) for f in verdict.findings} == {
        ("<collection>", "reads_tests"),
        ("t.py::test_a", "gc_introspection"),
        ("t.py::test_b", "frame_introspection"),
        ("<session>", "background_threads"),
    }
    assert "monitor_silenced" not in _codes(verdict)


def test_a_finding_of_a_code_the_monitor_never_sends_is_a_forgery() -> None:
    verdict = judge(EXPECTED, _finished(_finding("all_good_honest")), timeout_s=5)
    assert "malformed_message" in _codes(verdict)
    assert verdict.findings == []


@pytest.mark.parametrize(
    ("canary", "why"),
    [
        (None, "did not answer"),
        (_canary(0, 0, busy=True), "left busy"),
        (_canary(7, 0), "says it sent 7"),
        (_canary(1, 0), "record of findings"),
        (_canary(1, 1, state="other"), "armed state"),
    ],
)
def test_a_monitor_that_was_silenced_or_changed_is_tamper_evidence(
    canary: dict[str, Any] | None, why: str
) -> None:
    first = _monitored_test("t.py::test_a", canary=_canary(0, 0))
    second = [
        _report("t.py::test_b", "setup"),
        _finding("reads_tests"),
        _report("t.py::test_b", "call"),
        *([canary] if canary is not None else []),
        _report("t.py::test_b", "teardown"),
    ]
    verdict = judge(EXPECTED, _finished(*first, *second), timeout_s=5, monitored=True)
    silenced = [r for r in verdict.reasons if r.code == "monitor_silenced"]
    assert len(silenced) == 1
    assert why in silenced[0].detail
    assert silenced[0].severity == "tamper"


def test_the_state_announced_before_any_candidate_code_is_the_baseline() -> None:
    stream = [
        _canary(0, 0, state="armed"),  # collection starts: nothing imported yet
        {"type": wire.COLLECTED, "ids": [n for n, _ in EXPECTED], "heldout": [False] * 3},
        *_monitored_test("t.py::test_a", canary=_canary(0, 0, state="changed at import")),
    ]
    verdict = judge(EXPECTED, _finished(*stream), timeout_s=5, monitored=True)
    (silenced,) = [r for r in verdict.reasons if r.code == "monitor_silenced"]
    assert "armed state" in silenced.detail
    late = [*stream[1:2], _canary(0, 0, state="armed")]  # after collection: not a baseline
    assert "monitor_silenced" in _codes(judge(EXPECTED, _finished(*late), timeout_s=5))


def _recheck(site: str, op: str, *sides: dict[str, Any]) -> dict[str, Any]:
    return {"type": wire.RECHECK, "site": site, "op": op, "sides": list(sides)}


def test_a_passing_assertion_whose_plain_operands_disagree_fails_in_the_parent() -> None:
    stream = [
        _report("t.py::test_a", "setup"),
        _recheck("t.py:3:4", "==", {"v": {"t": [1, 2]}}, {"v": {"t": [1, 2]}}),
        _recheck("t.py:4:4", "in", {"v": "b"}, {"v": ["a", "b"]}),
        _recheck("t.py:5:4", "==", {"v": 3}, {"v": 4}),  # the child said it passed
        *_passing("t.py::test_a")[1:],
        *_passing("t.py::test_b"),
    ]
    verdict = judge(EXPECTED, _finished(*stream), timeout_s=5)
    assert _outcomes(verdict)["t.py::test_a"] == "failed"
    assert _outcomes(verdict)["t.py::test_b"] == "passed"
    (broken,) = [r for r in verdict.reasons if r.code == "assertion_recheck_failed"]
    assert broken.severity == "tamper"
    assert "t.py:5:4" in broken.detail


def test_operands_that_are_not_plain_skipped_or_nan_are_recorded_never_failed() -> None:
    stream = [
        _report("t.py::test_a", "setup"),
        _recheck("t.py:3:4", "==", {"np": "sol.Lazy", "own": True}, {"v": 7}),
        _recheck("t.py:4:4", "==", {"skip": "large"}, {"v": 7}),
        _recheck("t.py:5:4", "==", {"v": [{"f": "nan"}]}, {"v": [{"f": "nan"}]}),
        *_passing("t.py::test_a")[1:],
    ]
    verdict = judge(EXPECTED, _finished(*stream), timeout_s=5)
    assert _outcomes(verdict)["t.py::test_a"] == "passed"
    assert verdict.plain == {
        ("t.py::test_a", "t.py:3:4", 0): False,
        ("t.py::test_a", "t.py:3:4", 1): True,
        ("t.py::test_a", "t.py:4:4", 1): True,
        ("t.py::test_a", "t.py:5:4", 0): True,
        ("t.py::test_a", "t.py:5:4", 1): True,
    }
    assert verdict.not_plain[("t.py::test_a", "t.py:3:4", 0)].own
    assert "assertion_recheck_failed" not in _codes(verdict)


def test_a_recheck_of_an_unknown_comparison_or_the_wrong_arity_is_malformed() -> None:
    stream = [
        _report("t.py::test_a", "setup"),
        _recheck("t.py:3:4", "roughly", {"v": 1}, {"v": 1}),
        _recheck("t.py:3:4", "==", {"v": 1}),
    ]
    verdict = judge(EXPECTED, _finished(*stream), timeout_s=5)
    assert "malformed_message" in _codes(verdict)
    assert verdict.plain == {}


def test_rechecks_outside_a_test_are_filed_where_they_were_made() -> None:
    stream = [
        _recheck("t.py:1:0", "truth", {"v": True}),  # a module-level assert, at import
        {"type": wire.COLLECTED, "ids": [n for n, _ in EXPECTED], "heldout": [False] * 3},
        *_passing("t.py::test_a"),
        _recheck("conftest.py:9:4", "==", {"v": 2}, {"v": 2}),  # a fixture of test_b's setup
        *_passing("t.py::test_b"),
    ]
    verdict = judge(EXPECTED, _finished(*stream), timeout_s=5)
    assert set(verdict.plain) == {
        ("<collection>", "t.py:1:0", 0),
        ("t.py::test_b", "conftest.py:9:4", 0),
        ("t.py::test_b", "conftest.py:9:4", 1),
    }
    assert verdict.reasons == []


def test_sys_exit_with_a_failure_status_at_import_is_an_honest_failure() -> None:
    for status, ending in (
        ("2", "import_error"),
        ("usage: x", "import_error"),
        ("0", "early_exit"),
    ):
        stream = [{"type": wire.INTERNAL_ERROR, "reason": f"SystemExit: {status}"}]
        verdict = judge(EXPECTED, _outcome(*stream, exit_code=0), timeout_s=5)
        assert verdict.ending == ending, status


# -- the frame reader ------------------------------------------------------------------------


def test_frames_split_anywhere_arrive_whole() -> None:
    data = encode_frame({"type": wire.FINISH, "exitstatus": 0}) * 3
    reader = FrameReader()
    got = [m for i in range(len(data)) for m in reader.feed(data[i : i + 1])]
    assert got == [{"type": wire.FINISH, "exitstatus": 0}] * 3
    assert reader.broken is None
    assert reader.pending == 0


def test_an_oversized_frame_breaks_the_channel_without_reading_it() -> None:
    reader = FrameReader(max_frame=100)
    assert reader.feed(struct.pack(">I", 10**6) + b"{") == []
    assert reader.broken is not None
    assert "1000000-byte" in reader.broken


def test_invalid_json_and_untyped_objects_break_the_channel() -> None:
    for body in (b"{not json", json.dumps([1, 2]).encode(), b'{"no_type": 1}'):
        reader = FrameReader()
        reader.feed(struct.pack(">I", len(body)) + body)
        assert reader.broken is not None, body


def test_a_flood_past_the_total_limit_breaks_the_channel() -> None:
    reader = FrameReader(max_total=1000)
    frame = encode_frame({"type": wire.FINDING, "code": "x", "detail": "y" * 100})
    for _ in range(20):
        reader.feed(frame)
    assert reader.broken is not None
    assert "more than 1000 bytes" in reader.broken
