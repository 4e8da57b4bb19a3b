"""The result file's size bound: whatever a run sends, its ScoreResult stays under 5 MB.

Everything else a result holds from a run is bounded one item at a time (a test's message,
a reason's detail, the output excerpt) and in count (reasons and findings are one per code,
at most so many: integrity/verdict.py). What is left is the number of tests, which the
trusted suite decides, times a message each, which the candidate decides: a suite of a few
thousand tests, each failing with a long message, would pass the bound. So when a result
would, every test's message is cut to an equal share of what is left, and the result says so.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from pytest_scorewright._text import bound_message
from pytest_scorewright.result import ScoreResult

#: The largest result file, in bytes, as documented (docs/scoreresult.md).
RESULT_LIMIT = 5 * 1024 * 1024
#: What a built result may take: room is left for what is added later (the fitness
#: judgement, the caller's metadata: a few KB).
BUILT_LIMIT = RESULT_LIMIT - 256 * 1024
#: The most bytes one character of a message can take in the file (a control character
#: is written as a six-character escape).
_BYTES_A_CHAR = 6


def within_bound(result: ScoreResult, limit: int = BUILT_LIMIT) -> ScoreResult:
    """``result``, or the same with its tests' messages cut so its JSON fits in ``limit``."""
    messages = sum(len(t.message or "") for t in result.tests)
    if messages * _BYTES_A_CHAR + len(result.tests) * 1024 < limit // 2:
        return result  # cheap: far under the bound, as nearly every result is
    if _size(result.to_dict()) <= limit:
        return result
    bare = dataclasses.replace(
        result, tests=tuple(dataclasses.replace(t, message=None) for t in result.tests)
    )
    room = limit - _size(bare.to_dict()) - 512  # the note below
    cut = max(room // max(len(result.tests), 1) // _BYTES_A_CHAR, 0)
    tests = tuple(
        dataclasses.replace(t, message=bound_message(t.message, cut) if cut >= 16 else None)
        if t.message is not None
        else t
        for t in result.tests
    )
    note = (
        f"test messages cut to {cut} characters each, to keep the result under "
        f"{RESULT_LIMIT // (1024 * 1024)} MB"
    )
    return dataclasses.replace(result, tests=tests, extra={**result.extra, "bounded": note})


def _size(data: dict[str, Any]) -> int:
    # As ScoreResult.to_json writes it.
    text = json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False)
    return len(text.encode("utf-8", errors="surrogatepass")) + 1
