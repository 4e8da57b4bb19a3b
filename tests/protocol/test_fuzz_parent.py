"""Fuzzing the trusted parent: random and adversarial frames into the frame reader, whatever it
decodes into the verdict, the verdict into a ScoreResult, and the result into JSON. Every
example must give a result, a bounded one, and no exception (issue 14).

Bounded in time: a fixed number of examples per test (hypothesis), a few seconds in all.
"""

from __future__ import annotations

import json
import math
import struct
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_scorewright.integrity.verdict import judge
from pytest_scorewright.protocol import wire
from pytest_scorewright.protocol.channel import FrameReader
from pytest_scorewright.protocol.wire import Anchor, ChildOutcome
from pytest_scorewright.result import ScoreResult
from pytest_scorewright.results.bound import RESULT_LIMIT
from pytest_scorewright.results.measure import build_result

EXPECTED = [("t.py::test_a", False), ("t.py::test_b", False), ("h.py::test_h", True)]
IDS = [nodeid for nodeid, _ in EXPECTED]
FUZZ = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# Values a decoded frame can hold, with the ones the parent must survive: non-finite and
# huge numbers, lone surrogates, control characters, deep nesting, known test ids.
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
    st.sampled_from(["\udc80", "\ud800x", "\x00", "🙂", *IDS, "setup", "call", "teardown"]),
    st.sampled_from(["passed", "failed", "skipped"]),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=6), st.dictionaries(st.text(max_size=8), inner, max_size=6)
    ),
    max_leaves=40,
)
# Messages of known kinds, each field sometimes right and sometimes anything.
kinds = st.sampled_from(sorted(wire.VOCABULARY))


@st.composite
def messages(draw: st.DrawFn) -> dict[str, Any]:
    kind = wire.VOCABULARY[draw(kinds)]
    message: dict[str, Any] = {"type": kind.name}
    for name in (*kind.fields, *kind.optional, *kind.items):
        if draw(st.booleans()):
            message[name] = draw(values)
    if draw(st.booleans()):
        message.update(draw(st.dictionaries(st.text(max_size=8), values, max_size=3)))
    return message


def _body(message: dict[str, Any]) -> bytes:
    # allow_nan: the child is not bound by our encoder; a lone surrogate goes as an escape.
    return json.dumps(message, allow_nan=True).encode()


@st.composite
def streams(draw: st.DrawFn) -> bytes:
    """A byte stream a hostile child could write: frames of messages, of raw JSON, of
    garbage, deep nesting, wrong lengths, cut anywhere."""
    parts = []
    for _ in range(draw(st.integers(min_value=0, max_value=12))):
        choice = draw(st.integers(min_value=0, max_value=5))
        if choice <= 2:
            body = _body(draw(messages()))
        elif choice == 3:
            body = draw(st.binary(max_size=64))
        elif choice == 4:
            depth = draw(st.integers(min_value=1, max_value=3000))
            body = b'{"type": "x", "v": ' + b"[" * depth + b"]" * depth + b"}"
        else:
            body = _body({"type": "report", "v": draw(values)}).replace(b"0", b"NaN", 1)
        length = len(body)
        if draw(st.integers(min_value=0, max_value=20)) == 0:
            length = draw(st.integers(min_value=0, max_value=2**32 - 1))
        parts.append(struct.pack(">I", length) + body)
    return b"".join(parts)


def _verdict_to_result(verdict: Any) -> ScoreResult:
    result = build_result(
        verdict.records,
        mode="evaluator",
        duration_s=1.0,
        error=verdict.error,
        reasons=[*verdict.findings, *verdict.reasons],
        collection_errors=verdict.collection_errors,
        counts_known=True,
    )
    text = result.to_json()
    assert len(text.encode()) < RESULT_LIMIT
    assert ScoreResult.from_json(text) == result
    return result


def _outcome(found: list[dict[str, Any]], **fields: Any) -> ChildOutcome:
    stream = [{"type": wire.SANDBOX, "uid": None}, *found]
    return ChildOutcome(messages=[(0.01 * i, m) for i, m in enumerate(stream)], **fields)


@FUZZ
@given(data=streams(), cuts=st.lists(st.integers(min_value=1, max_value=4096), max_size=8))
def test_any_byte_stream_gives_a_verdict_and_a_bounded_result(data: bytes, cuts: list[int]) -> None:
    reader = FrameReader(max_messages=50)
    found: list[dict[str, Any]] = []
    start = 0
    for cut in [*cuts, len(data)]:
        found += reader.feed(data[start : start + cut])
        start += cut
    found += reader.feed(data[start:])
    for message in found:  # what passes the reader is strict JSON
        text = json.dumps(message, ensure_ascii=False, allow_nan=False)
        text.encode("utf-8")
    observed = _outcome(found, exit_code=0, channel_error=reader.broken)
    verdict = judge(EXPECTED, observed, timeout_s=5)
    assert [r.nodeid for r in verdict.records] == IDS
    _verdict_to_result(verdict)


@FUZZ
@given(
    found=st.lists(messages(), max_size=20),
    timed_out=st.booleans(),
    anchors=st.booleans(),
)
def test_any_decoded_messages_give_a_verdict_and_a_bounded_result(
    found: list[dict[str, Any]], timed_out: bool, anchors: bool
) -> None:
    # Straight to the verdict: anything strict JSON can hold, in any order, well formed or
    # not (the reader lets every typed object through; the verdict judges it).
    found = [m for m in found if _strict(m)]
    reference = {nodeid: [Anchor(1.5, "d", rel=0.1)] for nodeid in IDS} if anchors else None
    verdict = judge(
        EXPECTED, _outcome(found, timed_out=timed_out), timeout_s=5, reference_anchors=reference
    )
    assert [r.nodeid for r in verdict.records] == IDS
    result = _verdict_to_result(verdict)
    assert all(math.isfinite(s.value) for s in result.signals)


def _strict(message: dict[str, Any]) -> bool:
    try:
        json.dumps(message, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (ValueError, UnicodeEncodeError):
        return False  # the reader refuses it (tested above); the verdict never sees it
    return True
