"""Anchored checks, the parent's half: a candidate's anchored value against the reference's.

The child sends values (child/test_process/anchors.py); the comparison happens here, in the trusted
parent,
with the reference run's tolerance, never the candidate's.
"""

from __future__ import annotations

import math
from typing import Any

from pytest_scorewright.protocol import values
from pytest_scorewright.protocol.wire import Anchor


def matches(reference: Anchor, candidate: Anchor) -> bool:
    """Compare in the parent, with the reference's tolerance."""
    if candidate.not_plain is not None or reference.not_plain is not None:
        return False
    if reference.rel is None and reference.abs is None:
        return reference.digest == candidate.digest
    if reference.value is None or candidate.value is None:
        return reference.digest == candidate.digest
    try:
        ours, theirs = values.decode_plain(reference.value), values.decode_plain(candidate.value)
    except (values.NotPlainData, RecursionError):
        return False
    return _close(ours, theirs, reference.rel or 0.0, reference.abs or 0.0)


def _close(ref: Any, got: Any, rel: float, tol: float) -> bool:
    """Equal, floats within the reference's tolerance, also inside lists, tuples and dicts
    (sets and keys compare exactly)."""
    if type(ref) is not type(got):
        return False
    if isinstance(ref, float):
        return math.isclose(ref, got, rel_tol=rel, abs_tol=tol)
    if isinstance(ref, (list, tuple)):
        return len(ref) == len(got) and all(
            _close(a, b, rel, tol) for a, b in zip(ref, got, strict=True)
        )
    if isinstance(ref, dict):
        return ref.keys() == got.keys() and all(_close(ref[k], got[k], rel, tol) for k in ref)
    return bool(ref == got)
