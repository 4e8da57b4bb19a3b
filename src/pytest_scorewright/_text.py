"""Text that came from a run, made safe and bounded, on either side of the sandbox (imports
nothing of ours). Everything candidate code can write (exception messages, output,
collection errors, test messages, reasons' details) passes :func:`clean` before it reaches a
terminal, HTML, a report or an LLM: :func:`bound_message` and :func:`excerpt` clean too."""

from __future__ import annotations

import re

#: Longest per-test message kept, in characters; longer ones are cut in the middle.
MESSAGE_LIMIT = 2048


#: Terminal escape sequences: CSI (colours, cursor moves, erasing), OSC (window titles,
#: hyperlinks, clipboard writes) up to its terminator, and the two-character ones.
_ESCAPE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]?|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[ -~]?)")
#: What is left that a terminal or a reader would act on: C0 controls but tab and newline,
#: DEL, C1 controls, Unicode line separators and bidirectional overrides (which reorder what
#: a person reads).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def clean(text: str) -> str:
    """``text`` with terminal escape sequences removed, other control characters written as
    ``\\xNN``/``\\uNNNN``, and lone surrogates (unencodable) as ``\\udcNN``; newlines and
    tabs are kept. Idempotent; ASCII printable text is returned as it is."""
    if text.isascii() and text.isprintable():
        return text
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    text = _ESCAPE.sub("", text)
    return _CONTROL.sub(_escaped, text)


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def bound_message(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """``text`` cleaned (:func:`clean`) and cut to at most ``limit`` characters, keeping its
    start and end."""
    text = clean(text)
    if len(text) <= limit:
        return text
    marker = " … "
    keep = limit - len(marker)
    head = keep // 2
    return text[:head] + marker + text[len(text) - (keep - head) :]


def excerpt(text: str, head: int = 2048, tail: int = 6144) -> str:
    """A run's output for the result: its start and its end. The start holds what a crash
    prints first (faulthandler's "Fatal Python error", a conftest's import error); the end holds
    pytest's summary. A deep stack between them is what gets cut, and the cut says its size.
    Cleaned (:func:`clean`)."""
    text = clean(text)
    if len(text) <= head + tail:
        return text
    left_out = len(text) - head - tail
    return f"{text[:head]}\n… [{left_out} characters left out] …\n{text[-tail:]}"


#: A pytest failure line that states an exception: ``E   ValueError: bad``.
_RAISED = re.compile(
    r"^(?:E\s+)?((?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Exit|Interrupt)\b.*)$"
)
_WHERE = re.compile(r'File "([^"]+)", line (\d+)|^(\S+\.py):(\d+): in ')


def error_line(text: str) -> str:
    """The one line of a failure report an LLM or a person needs first: the last line that
    states an exception (``SyntaxError: '[' was never closed``), with the file and line just
    above it where it names none; else the last non-empty line."""
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    for i in range(len(lines) - 1, -1, -1):
        found = _RAISED.match(lines[i].strip())
        if found is None:
            continue
        summary = found.group(1)
        if "line " not in summary:
            for above in reversed(lines[max(0, i - 4) : i]):
                where = _WHERE.search(above.strip())
                if where is not None:
                    path, line = where.group(1) or where.group(3), where.group(2) or where.group(4)
                    return f"{summary} ({path.rsplit('/', 1)[-1]}, line {line})"
        return summary
    return lines[-1].strip() if lines else ""
