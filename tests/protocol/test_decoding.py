"""The parent's decoding and bounds on their own: whatever bytes a child writes, the parent
gets a reason, never an exception, and keeps a bounded amount of it (no fork here).

Each red-team finding of issue 14 that is about decoding is first reproduced at this level:
deep nesting, test ids that are not strings, lone surrogates, NaN, forged findings by the
thousand, and a flood of tiny frames.
"""

from __future__ import annotations

import json
import struct
from typing import Any

import pytest

from pytest_scorewright.child.test_process.anchors import make_anchor
from pytest_scorewright.integrity.codes import CODES
from pytest_scorewright.integrity.verdict import MAX_COLLECTION_ERRORS, MAX_FINDINGS, judge
from pytest_scorewright.protocol import wire
from pytest_scorewright.protocol.channel import (
    MAX_DEPTH,
    FrameError,
    FrameReader,
    decode_frame,
    decode_json,
    encode_frame,
)
from pytest_scorewright.protocol.wire import ChildOutcome, outcome_from_wire, outcome_to_wire
from pytest_scorewright.result import ScoreResult, TestRecord
from pytest_scorewright.results.bound import RESULT_LIMIT
from pytest_scorewright.results.measure import build_result

EXPECTED = [("t.py::test_a", False), ("t.py::test_b", False)]


def _frame(body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + body


def _depth(value: Any) -> int:
    children = value.values() if isinstance(value, dict) else value
    if not isinstance(value, (dict, list)):
        return 0
    return 1 + max((_depth(v) for v in children), default=0)


def _read(*bodies: bytes) -> FrameReader:
    reader = FrameReader()
    for body in bodies:
        reader.feed(_frame(body))
    return reader


def _finished(*messages: dict[str, Any]) -> ChildOutcome:
    stream = [{"type": wire.SANDBOX, "uid": None}, *messages, {"type": "finish", "exitstatus": 0}]
    return ChildOutcome(messages=[(0.01 * i, m) for i, m in enumerate(stream)], exit_code=0)


def _codes(verdict: Any) -> dict[str, str]:
    return {r.code: r.detail for r in [*verdict.reasons, *verdict.findings]}


# -- frames that must not decode --------------------------------------------------------------

REFUSED = {
    # The red team's: no result at all (a RecursionError in the job process).
    "nested 100000 deep": b'{"type": "finding", "detail": '
    + b"[" * 100_000
    + b"]" * 100_000
    + b"}",
    "nested just past the limit": b'{"type": "x", "v": '
    + b"[" * MAX_DEPTH
    + b"]" * MAX_DEPTH
    + b"}",
    # The red team's: these two killed the shared warm parent (its strict re-encoding).
    "a lone surrogate escape": b'{"type": "finding", "code": "x", "detail": "\\udc80"}',
    "a lone surrogate in a key": b'{"type": "finding", "\\ud800": 1}',
    "NaN": b'{"type": "report", "duration": NaN}',
    "Infinity": b'{"type": "report", "duration": Infinity}',
    "-Infinity": b'{"type": "report", "duration": -Infinity}',
    "a float that overflows": b'{"type": "report", "duration": 1e999}',
    "an integer of 5000 digits": b'{"type": "finish", "exitstatus": ' + b"9" * 5000 + b"}",
    "bytes that are not UTF-8": b'{"type": "finding", "detail": "\xff\xfe"}',
    "an encoded surrogate": b'{"type": "finding", "detail": "\xed\xb2\x80"}',
    "not JSON": b"{not json",
    "a list": b"[1, 2]",
    "a bare string": b'"\\udc80"',
    "an object without a type": b'{"no_type": 1}',
    "a type that is not a string": b'{"type": 7}',
}


@pytest.mark.parametrize("body", REFUSED.values(), ids=REFUSED.keys())
def test_a_malformed_frame_breaks_the_channel_with_a_reason_never_an_exception(
    body: bytes,
) -> None:
    reader = _read(body)
    assert reader.broken is not None
    assert reader.broken.startswith("the child sent ")
    # Nothing after the bad frame is read: anyone may have written it.
    assert reader.feed(encode_frame({"type": "finish", "exitstatus": 0})) == []
    with pytest.raises(FrameError):
        decode_frame(body)


def test_what_the_child_legitimately_sends_decodes() -> None:
    deepest: Any = {}
    for _ in range(
        50
    ):  # child/test_process/anchors.py encodes at most this deep; a dict costs 3 levels
        deepest = {1: deepest}
    anchor = make_anchor(deepest, None, None)
    assert anchor.not_plain is None
    assert MAX_DEPTH - 10 < _depth(anchor.value) + 1 <= MAX_DEPTH  # close to the limit
    messages = [
        {"type": wire.ANCHOR, "nodeid": "t.py::test_a", **anchor.to_wire()},
        {
            "type": wire.REPORT,
            "nodeid": "t.py::test_a[\U0001f600-é]",
            "when": "call",
            "outcome": "passed",
            "duration": 1e-9,
            "message": "\x00\x1f 🙂",
        },
        {
            "type": wire.COLLECTED,
            "ids": [f"t.py::test[{i}]" for i in range(2000)],
            "heldout": [False] * 2000,
        },
    ]
    reader = FrameReader()
    assert reader.feed(b"".join(encode_frame(m) for m in messages)) == messages
    assert reader.broken is None
    # A surrogate pair written as escapes is one character, not a lone surrogate.
    assert decode_frame(b'{"type": "x", "s": "\\ud83d\\ude00"}')["s"] == "\U0001f600"


def test_past_the_message_cap_the_channel_breaks_and_nothing_more_is_kept() -> None:
    reader = FrameReader(max_messages=1000)
    got = reader.feed(_frame(b'{"type": "x"}') * 5000)
    assert len(got) == 1000
    assert reader.broken == "the child sent more than 1000 messages"


def test_a_jobs_answer_round_trips_and_a_non_finite_one_is_refused() -> None:
    outcome = ChildOutcome(
        messages=[(0.5, {"type": "report", "nodeid": "é🙂", "duration": 0.25})], wall_s=1.0
    )
    text = json.dumps(outcome_to_wire(outcome), ensure_ascii=False, allow_nan=False)
    assert outcome_from_wire(decode_json(text.encode(), max_depth=None)) == outcome
    with pytest.raises(FrameError):
        decode_json(b'{"wall_s": NaN}', max_depth=None)
    with pytest.raises(FrameError):
        decode_json(b"[" * 100_000 + b"]" * 100_000, max_depth=None)


# -- the wire table decides every field's type -------------------------------------------------


_SAMPLE: dict[type, Any] = {str: "s", int: 1, float: 1.5, bool: True, list: [], type(None): None}
_WRONG: list[Any] = [{"a": 1}, [1], "s", True, 1.5, None]


def _valid(kind: wire.MessageKind) -> dict[str, Any]:
    return {"type": kind.name, **{name: _SAMPLE[types[0]] for name, types in kind.fields.items()}}


@pytest.mark.parametrize("kind", wire.VOCABULARY.values(), ids=wire.VOCABULARY.keys())
def test_every_declared_field_of_every_kind_is_type_checked(kind: wire.MessageKind) -> None:
    assert wire.problem(_valid(kind)) is None
    for name, types in {**kind.fields, **kind.optional}.items():
        wrong = next(v for v in _WRONG if type(v) not in types)
        assert wire.problem({**_valid(kind), name: wrong}) is not None, (kind.name, name)
    for name, types in kind.items.items():
        good = _SAMPLE[types[0]]
        assert wire.problem({**_valid(kind), name: [good, good]}) is None, (kind.name, name)
        wrong = next(v for v in _WRONG if type(v) not in types)
        assert wire.problem({**_valid(kind), name: [good, wrong]}) is not None, (kind.name, name)


def test_test_ids_that_are_not_strings_are_malformed_not_a_type_error() -> None:
    stream: list[dict[str, Any]] = [
        {"type": wire.COLLECTED, "ids": [[1], {"a": 1}, 3], "heldout": []},
        {"type": wire.COLLECTED, "ids": ["t.py::test_a"], "heldout": ["yes"]},
        {
            "type": wire.REPORT,
            "nodeid": ["t.py::test_a"],
            "when": "setup",
            "outcome": "passed",
            "duration": 0.1,
        },
        {"type": wire.COLLECT_ERROR, "nodeid": {"x": 1}, "message": "m"},
        {
            "type": wire.REPORT,
            "nodeid": "t.py::test_a",
            "when": "setup",
            "outcome": "passed",
            "duration": True,
        },
        {"type": wire.ANCHOR, "digest": "d", "rel": "0.1"},
    ]
    verdict = judge(EXPECTED, _finished(*stream), timeout_s=5)
    assert "(x6)" in _codes(verdict)["malformed_message"]
    assert {r.outcome for r in verdict.records} == {"not_run"}


# -- bounded whatever arrives -------------------------------------------------------------------


def test_forged_finding_codes_are_one_counted_reason_never_kept() -> None:
    # The monitor sends only codes of the table (integrity/codes.py): 5,000 made-up ones are
    # someone else writing, one reason with a count; nothing of them is kept.
    forged = [{"type": wire.FINDING, "code": f"c{i}", "detail": "d" * 10_000} for i in range(5000)]
    verdict = judge(EXPECTED, _finished(*forged), timeout_s=5)
    assert verdict.findings == []
    malformed = [r for r in verdict.reasons if r.code == "malformed_message"]
    assert len(malformed) == 1
    assert malformed[0].detail.endswith("(x5000)")
    assert all(len(r.detail) < 400 for r in verdict.reasons)


def test_findings_filed_per_test_are_capped_and_counted() -> None:
    codes = sorted(c for c, spec in CODES.items() if spec.origin == "monitor")
    tests = [(f"t.py::test_{i}", False) for i in range(6000 // len(codes) + 2)]
    stream: list[dict[str, Any]] = []
    for nodeid, _ in tests:
        stream.append(
            {
                "type": wire.REPORT,
                "nodeid": nodeid,
                "when": "setup",
                "outcome": "passed",
                "duration": 0.0,
                "message": "",
            }
        )
        stream += [{"type": wire.FINDING, "code": c, "detail": "x" * 1000} for c in codes]
    verdict = judge(tests, _finished(*stream), timeout_s=5)
    assert len(verdict.findings) == MAX_FINDINGS
    assert all(len(f.detail) < 400 for f in verdict.findings)
    capped = [r for r in verdict.reasons if r.code == "findings_capped"]
    assert len(capped) == 1
    assert capped[0].detail.endswith(f"past the first {MAX_FINDINGS} were counted, not kept")


def test_collection_errors_are_capped_and_counted() -> None:
    errors: list[dict[str, Any]] = [
        {"type": wire.COLLECT_ERROR, "nodeid": f"f{i}.py" * 1000, "message": "E" * 100_000}
        for i in range(3000)
    ]
    verdict = judge(EXPECTED, _finished(*errors), timeout_s=5)
    assert len(verdict.collection_errors) == MAX_COLLECTION_ERRORS
    assert (verdict.error or "").startswith("3000 test file(s) could not import the candidate")
    assert len(verdict.error or "") < 1000


def test_a_session_error_from_the_child_is_cut_to_a_line() -> None:
    interrupted = {"type": wire.INTERRUPTED, "reason": "r" * 200_000}
    verdict = judge(EXPECTED, _finished(interrupted), timeout_s=5)
    assert len(verdict.error or "") < 1100


@pytest.mark.slow  # starts a process, or takes seconds of CPU
def test_the_result_stays_under_its_bound_whatever_the_tests_messages() -> None:
    # Three thousand tests (a trusted suite may have them), each failing with the longest
    # message a run may send, written as escapes: 2048 * 6 bytes each, 37 MB in all.
    records = [
        TestRecord(f"t.py::test_{i}", "failed", "call", False, 0.1, "\x01" * 2048)
        for i in range(3000)
    ]
    result = build_result(records, mode="evaluator", duration_s=1.0)
    text = result.to_json()
    assert len(text.encode()) < RESULT_LIMIT
    assert "test messages cut to" in result.extra["bounded"]
    assert ScoreResult.from_json(text).signal("tests_total") == 3000.0
    small = build_result(records[:10], mode="evaluator", duration_s=1.0)
    assert "bounded" not in small.extra
    assert small.tests[0].message == "\x01" * 2048
