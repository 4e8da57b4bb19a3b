"""The one-way message channel from the sandboxed child to the trusted parent.

Frames are a 4-byte big-endian length and a UTF-8 JSON object, never pickle: the parent
parses them as data. Everything is bounded (one frame, all frames together) so that a child
flooding the pipe costs the parent a fixed amount of memory, and anything malformed ends the
channel with a recorded reason instead of an exception in the parent.
"""

from __future__ import annotations

import json
import os
import struct
from dataclasses import dataclass, field
from typing import Any

from pytest_scorewright.sandbox.wire import OVERSIZE

_HEADER = struct.Struct(">I")

#: Largest single frame the parent accepts.
MAX_FRAME = 256 * 1024
#: Largest total the parent accepts from one child run.
MAX_TOTAL = 16 * 1024 * 1024


def encode_frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message, ensure_ascii=False, allow_nan=False).encode("utf-8")
    return _HEADER.pack(len(body)) + body


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


@dataclass
class FrameReader:
    """Incremental parser for the parent side: feed it bytes, take whole messages out.

    Example::

        reader = FrameReader()
        for message in reader.feed(os.read(fd, 65536)):
            ...
        if reader.broken: ...  # a reason, and nothing more is parsed
    """

    max_frame: int = MAX_FRAME
    max_total: int = MAX_TOTAL
    broken: str | None = None
    total: int = 0
    _buffer: bytearray = field(default_factory=bytearray)

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        if self.broken is not None:
            return []
        self.total += len(data)
        if self.total > self.max_total:
            self.broken = f"the child sent more than {self.max_total} bytes of messages"
            self._buffer.clear()
            return []
        self._buffer += data
        messages: list[dict[str, Any]] = []
        while len(self._buffer) >= _HEADER.size:
            (length,) = _HEADER.unpack_from(self._buffer)
            if length > self.max_frame:
                self.broken = f"the child sent a {length}-byte message (limit {self.max_frame})"
                self._buffer.clear()
                return messages
            if len(self._buffer) < _HEADER.size + length:
                break
            body = bytes(self._buffer[_HEADER.size : _HEADER.size + length])
            del self._buffer[: _HEADER.size + length]
            try:
                message = json.loads(body.decode("utf-8"))
            except (UnicodeDecodeError, ValueError):
                self.broken = "the child sent a message that is not valid JSON"
                self._buffer.clear()
                return messages
            if not isinstance(message, dict) or not isinstance(message.get("type"), str):
                self.broken = "the child sent a message that is not a typed JSON object"
                self._buffer.clear()
                return messages
            messages.append(message)
        return messages

    @property
    def pending(self) -> int:
        """Bytes of an unfinished frame (a child that died mid-write)."""
        return len(self._buffer)
