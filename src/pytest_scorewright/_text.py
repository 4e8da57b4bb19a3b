"""Bounding text that came from a run, on either side of the sandbox (imports nothing)."""

from __future__ import annotations

#: Longest per-test message kept, in characters; longer ones are cut in the middle.
MESSAGE_LIMIT = 2048


def bound_message(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """Cut ``text`` to at most ``limit`` characters, keeping its start and end."""
    if len(text) <= limit:
        return text
    marker = " … "
    keep = limit - len(marker)
    head = keep // 2
    return text[:head] + marker + text[len(text) - (keep - head) :]


def excerpt(text: str, head: int = 2048, tail: int = 6144) -> str:
    """A run's output for the result: its start and its end. The start holds what a crash
    prints first (faulthandler's "Fatal Python error", a conftest's import error); the end holds
    pytest's summary. A deep stack between them is what gets cut, and the cut says its size."""
    if len(text) <= head + tail:
        return text
    left_out = len(text) - head - tail
    return f"{text[:head]}\n… [{left_out} characters left out] …\n{text[-tail:]}"
