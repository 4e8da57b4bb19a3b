"""The one-way message channel from the sandboxed child to the trusted parent.

Frames are a 4-byte big-endian length and a UTF-8 JSON object, never pickle: the parent
parses them as data. Everything is bounded (one frame, all frames together) so that a child
flooding the pipe costs the parent a fixed amount of memory, and anything malformed ends the
channel with a recorded reason instead of an exception in the parent.

Decoding is strict (:func:`decode_frame`): valid UTF-8, JSON whose numbers are finite (Python's
json takes ``NaN``, ``Infinity`` and ``1e999``), integers of at most :data:`MAX_INT_DIGITS`
digits, nesting at most :data:`MAX_DEPTH` deep, no lone surrogate (json turns a ``\\udc80``
escape into one, which no UTF-8 writer can write later), and an object with a string
``type``. A frame that is anything else is refused with a reason; nothing a child writes
raises in the parent.
"""

from __future__ import annotations

import json
import math
import os
import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pytest_scorewright.protocol.wire import MAX_MESSAGES, OVERSIZE

_HEADER = struct.Struct(">I")

#: Largest single frame the parent accepts.
MAX_FRAME = 256 * 1024
#: Largest total the parent accepts from one child run.
MAX_TOTAL = 16 * 1024 * 1024
#: Deepest nesting of arrays and objects in a frame. An anchored value
#: (child/test_process/anchors.py)
#: nests at most 51 levels, each at most three JSON levels deep (a dict is
#: ``{"dict": [[key, value], ...]}``), inside a message: 160 leaves room for all of it and
#: stays far below the parser's recursion limit.
MAX_DEPTH = 160
#: Longest integer literal, in characters: far more than any count or tagged value needs
#: (anchored integers beyond 2**53 travel as strings), and far below the sizes at which
#: int() gets slow (Python 3.10 has no limit of its own).
MAX_INT_DIGITS = 40

# A \uD800-\uDFFF escape: the only way a lone surrogate gets into decoded JSON, since strict
# UTF-8 decoding refuses encoded surrogates.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


class FrameError(ValueError):
    """A frame that is not a well-formed message; the text is the reason."""


def encode_frame(message: dict[str, Any]) -> bytes:
    return frame(json.dumps(message, ensure_ascii=False, allow_nan=False).encode("utf-8"))


def send(fd: int, message: dict[str, Any]) -> None:
    """Write one frame to ``fd`` (child side); a frame too large for the parent is cut down
    to a small error frame rather than dropped silently."""
    frame = encode_frame(message)
    if len(frame) > MAX_FRAME:
        frame = encode_frame({"type": OVERSIZE, "of": str(message.get("type", "?"))[:40]})
    view = memoryview(frame)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _refuse_constant(name: str) -> Any:
    raise FrameError(f"a non-finite number ({name})")


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise FrameError(f"a number out of range ({text[:20]})")
    return number


def _bounded_int(text: str) -> int:
    if len(text) > MAX_INT_DIGITS:
        raise FrameError(f"an integer of {len(text)} digits (limit {MAX_INT_DIGITS})")
    return int(text)


_DECODER = json.JSONDecoder(
    parse_float=_finite_float, parse_int=_bounded_int, parse_constant=_refuse_constant
)


def frame(body: bytes) -> bytes:
    """``body`` (JSON already encoded) as one frame."""
    return _HEADER.pack(len(body)) + body


def decode_frame(body: bytes, max_depth: int = MAX_DEPTH) -> dict[str, Any]:
    """One frame's body as a message, or :class:`FrameError` saying why it is not one."""
    message = decode_json(body, max_depth)
    if not isinstance(message, dict) or not isinstance(message.get("type"), str):
        raise FrameError("a message that is not a typed JSON object")
    return message


def decode_json(body: bytes, max_depth: int | None = MAX_DEPTH) -> Any:
    """``body`` as strict JSON (see the module docstring), or :class:`FrameError`.
    ``max_depth=None``: nesting is left to the parser's own limit, for JSON whose writer
    already checked it (a job's answer: warm/parent.py)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise FrameError("a message that is not valid UTF-8") from None
    try:
        message = _DECODER.decode(text)
    except FrameError:
        raise
    except RecursionError:
        raise FrameError(f"a message nested more than {_limit_text(max_depth)} deep") from None
    except ValueError:
        raise FrameError("a message that is not valid JSON") from None
    # Cheap tests first: most frames have few brackets and no surrogate escape at all.
    limit = max_depth if max_depth is not None else 1 << 30
    deep = max_depth is not None and text.count("[") + text.count("{") > max_depth
    surrogates = _SURROGATE_ESCAPE.search(text) is not None
    if deep or surrogates:
        _check_tree(message, limit, surrogates)
    return message


def _limit_text(max_depth: int | None) -> str:
    return str(max_depth) if max_depth is not None else "the parser takes"


def _check_tree(root: Any, max_depth: int, surrogates: bool) -> None:
    """Nesting within ``max_depth``; with ``surrogates``, no string that UTF-8 cannot hold."""
    if surrogates and isinstance(root, str) and not _encodable(root):
        raise FrameError("a message with a lone surrogate in a string")
    stack: list[tuple[Any, int]] = [(root, 1)] if isinstance(root, (dict, list)) else []
    while stack:
        node, depth = stack.pop()
        if depth > max_depth:
            raise FrameError(f"a message nested more than {max_depth} deep")
        children = node.items() if isinstance(node, dict) else enumerate(node)
        for key, value in children:
            if surrogates:
                for text in (key, value):
                    if isinstance(text, str) and not _encodable(text):
                        raise FrameError("a message with a lone surrogate in a string")
            if isinstance(value, (dict, list)):
                stack.append((value, depth + 1))


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@dataclass
class FrameSplitter:
    """Whole frames out of a byte stream, each at most ``max_frame`` bytes and all of them
    together at most ``max_total``; past either limit the stream is ``broken`` (a reason)
    and nothing more comes out."""

    max_frame: int = MAX_FRAME
    max_total: int = MAX_TOTAL
    broken: str | None = None
    total: int = 0
    _buffer: bytearray = field(default_factory=bytearray)

    def frames(self, data: bytes) -> Iterator[bytes]:
        if self.broken is not None:
            return
        self.total += len(data)
        if self.total > self.max_total:
            self.fail(f"the child sent more than {self.max_total} bytes of messages")
            return
        self._buffer += data
        while len(self._buffer) >= _HEADER.size:
            (length,) = _HEADER.unpack_from(self._buffer)
            if length > self.max_frame:
                self.fail(f"the child sent a {length}-byte message (limit {self.max_frame})")
                return
            if len(self._buffer) < _HEADER.size + length:
                break
            body = bytes(self._buffer[_HEADER.size : _HEADER.size + length])
            del self._buffer[: _HEADER.size + length]
            yield body
            if self.broken is not None:
                return

    def fail(self, reason: str) -> None:
        if self.broken is None:
            self.broken = reason
        self._buffer.clear()

    @property
    def pending(self) -> int:
        """Bytes of an unfinished frame (a child that died mid-write)."""
        return len(self._buffer)


@dataclass
class FrameReader(FrameSplitter):
    """Incremental parser for the parent side: feed it bytes, take whole messages out. The
    first frame that is not a well-formed message breaks the channel: after it, a stream
    that may have been written by anyone is no longer read.

    Example::

        reader = FrameReader()
        for message in reader.feed(os.read(fd, 65536)):
            ...
        if reader.broken: ...  # a reason, and nothing more is parsed
    """

    max_depth: int = MAX_DEPTH
    max_messages: int = MAX_MESSAGES
    count: int = 0

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = []
        for body in self.frames(data):
            self.count += 1
            if self.count > self.max_messages:
                self.fail(f"the child sent more than {self.max_messages} messages")
                break
            try:
                messages.append(decode_frame(body, self.max_depth))
            except FrameError as exc:
                self.fail(f"the child sent {exc}")
        return messages
