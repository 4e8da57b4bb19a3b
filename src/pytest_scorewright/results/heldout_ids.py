"""Held-out test ids as the user laid them out, in the parent.

Every run sees its suite at ``tests/`` in its work dir, so a held-out test's id comes back as
``tests/test_strict.py::test_x`` although the file is ``heldout/test_strict.py`` (plugin mode
says ``heldout/...``). The result says where the test is: the held-out records' ids, and those
ids wherever the result's messages and integrity details name them, take the held-out
directory's own name. Done last, on the assembled result, so that everything matched by id
before (the reference's runs, anchors, benchmarks, limits) keeps the ids the runs used.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

from pytest_scorewright.result import Integrity, ScoreResult

#: Where every run sees its suite (sandbox/workspace.py).
RUN_PREFIX = "tests/"
#: The held-out suite's name (scoring/prepared.py), as ``limits.per_test.own`` keys it.
HELDOUT_SUITE = "held-out"


def with_heldout_ids(result: ScoreResult, directory: str) -> ScoreResult:
    """``result`` with each held-out test's id under ``directory/`` instead of ``tests/``."""
    prefix = directory.strip("/") + "/"
    if prefix == RUN_PREFIX or not directory:
        return result
    renamed = {
        t.nodeid: prefix + t.nodeid[len(RUN_PREFIX) :]
        for t in result.tests
        if t.heldout and t.nodeid.startswith(RUN_PREFIX)
    }
    if not renamed:
        return result
    # One pass over each text, longest ids first (an id that is the start of another, a
    # parametrized family, is not replaced inside the longer one): a suite of thousands of
    # held-out tests, most failing, costs one scan a message, not one a test.
    pattern = re.compile("|".join(map(re.escape, sorted(renamed, key=len, reverse=True))))

    def say(text: str | None) -> str | None:
        if not text or RUN_PREFIX not in text:
            return text
        return pattern.sub(lambda found: renamed[found.group(0)], text)

    tests = tuple(
        dataclasses.replace(t, nodeid=renamed.get(t.nodeid, t.nodeid), message=say(t.message))
        for t in result.tests
    )
    reasons = tuple(
        dataclasses.replace(r, detail=say(r.detail) or "") for r in result.integrity.reasons
    )
    integrity: Integrity = dataclasses.replace(result.integrity, reasons=reasons)
    return dataclasses.replace(
        result,
        tests=tests,
        integrity=integrity,
        error=say(result.error),
        limits=_limits(result.limits, renamed),
    )


def _limits(limits: Mapping[str, Any] | None, renamed: Mapping[str, str]) -> Any:
    """The held-out tests' own limits (``limits.per_test.own``) under their new ids."""
    per_test = (limits or {}).get("per_test")
    if limits is None or not isinstance(per_test, dict):
        return limits
    own = per_test.get("own")
    if not isinstance(own, dict) or HELDOUT_SUITE not in own:
        return limits
    moved = {renamed.get(k, k): v for k, v in own[HELDOUT_SUITE].items()}
    return {**limits, "per_test": {**per_test, "own": {**own, HELDOUT_SUITE: moved}}}
