"""Anchored checks: a test sends the candidate's output to the trusted parent, which compares
it with the value the reference solution produced.

This module is the child's half (the fixture and the strict encoding); the parent compares
in integrity/anchor_evidence.py. Example (a test in the trusted suite)::

    def test_sorts(scorewright):
        scorewright.expect(solution.sort([3, 1, 2]))
        scorewright.expect(solution.mean([1, 2]), rel=1e-9)

With the evaluator and a reference, the parent records the reference's values once; for each
candidate it compares in the parent. The expected values never exist in the candidate's
process (nothing to read from disk or from a caller's frame), values are serialized strictly
(exact builtin types: a subclass or an object with its own ``__eq__`` is a finding, not a
value), and a test whose anchored values differ fails whatever the child reported.
Tolerances are taken from the reference run, never from the candidate's.

``scorewright.submit(name, value)`` sends a value the same way for a trusted objective
function to score in the parent (scoring/objectives.py, docs/objectives.md)::

    def test_packing(scorewright):
        scorewright.submit("radii", solution.pack(26))
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from typing import Any

import pytest

from pytest_scorewright.protocol import values, wire
from pytest_scorewright.protocol.wire import Anchor

#: The child's way to the parent (anchored values, submissions, benchmark figures); absent in
#: plugin mode, where expect() and submit() record nothing.
ANCHOR_SINK = pytest.StashKey[Callable[[dict[str, Any]], None]]()
#: A submitted value's canonical JSON may be at most this long (a message is at most 256 KiB).
SUBMIT_LIMIT = 128 * 1024
#: Objective names: they become signal names (``objective_<name>``).
NAME = re.compile(r"[a-z][a-z0-9_]{0,40}")

#: Values larger than this (as canonical JSON) travel as a digest and compare exactly.
INLINE_LIMIT = 32 * 1024


#: A value that is not made of exact builtin types (protocol/values.py).
NotPlain = values.NotPlainData


def encode(value: Any) -> Any:
    """``value`` in the one tagged JSON of exact builtin values (protocol/values.py)."""
    return values.plain(value)


def make_anchor(value: Any, rel: float | None, abs_tol: float | None) -> Anchor:
    try:
        encoded = encode(value)
    except (NotPlain, RecursionError) as exc:
        return Anchor(None, "", rel, abs_tol, not_plain=str(exc)[:200])
    text = values.canonical(encoded)
    digest = hashlib.sha256(text.encode()).hexdigest()
    inline = encoded if len(text) <= INLINE_LIMIT else None
    return Anchor(inline, digest, rel, abs_tol)


def submission(name: Any, value: Any) -> dict[str, Any]:
    """The ``submit`` message for ``value``; raises for a bad name, a value that is not made
    of exact builtin types, or one too large to send."""
    if type(name) is not str or not NAME.fullmatch(name):
        raise ValueError(
            f"scorewright.submit: the name {name!r} must be lower-case letters, digits and _, "
            "starting with a letter (it becomes the signal objective_<name>)"
        )
    try:
        encoded = encode(value)
    except (NotPlain, RecursionError) as exc:
        raise TypeError(
            f"scorewright.submit({name!r}, ...): the value is not plain data ({exc}); submit "
            "builtin types only (list, tuple, dict, str, int, float...: e.g. array.tolist())"
        ) from None
    text = json.dumps(encoded, sort_keys=True, allow_nan=False)
    if len(text) > SUBMIT_LIMIT:
        raise ValueError(
            f"scorewright.submit({name!r}, ...): the value is {len(text)} bytes as JSON, more "
            f"than {SUBMIT_LIMIT}; submit less (a summary the objective can check)"
        )
    return {"type": wire.SUBMIT, "name": name, "value": encoded}


class Scorewright:
    """The ``scorewright`` fixture: ``scorewright.expect(value)`` anchors a value;
    ``scorewright.submit(name, value)`` sends one for a trusted objective to score."""

    def __init__(self, request: pytest.FixtureRequest) -> None:
        self._sink = request.config.stash.get(ANCHOR_SINK, None)
        self._nodeid = request.node.nodeid

    def expect(self, value: Any, *, rel: float | None = None, abs: float | None = None) -> None:
        """Send ``value`` to the trusted parent for comparison with the reference's value.

        ``rel``/``abs`` allow float tolerance (the reference run's tolerance is the one used).
        In plugin mode there is no parent and nothing is recorded.
        """
        if self._sink is None:
            return
        anchor = make_anchor(
            value, float(rel) if rel is not None else None, float(abs) if abs is not None else None
        )
        self._sink({"type": wire.ANCHOR, "nodeid": self._nodeid, **anchor.to_wire()})

    def submit(self, name: str, value: Any) -> None:
        """Send ``value`` to the trusted parent, where the objective ``name`` scores it
        (``--objective name=PATH:FUNCTION``): the score is never computed next to the
        candidate. Builtin types only, at most :data:`SUBMIT_LIMIT` bytes as JSON; checked
        in plugin mode too, where nothing is recorded."""
        message = submission(name, value)
        if self._sink is not None:
            self._sink({**message, "nodeid": self._nodeid})
