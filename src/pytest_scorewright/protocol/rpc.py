"""A call channel between the test process and the candidate's process.

Frames are a 4-byte big-endian length and a JSON object (ASCII, no NaN): requests
``{"q": id, "op": ...}``, replies ``{"r": id, "v": value}`` or ``{"r": id, "e": error}``,
output ``{"o": "out"|"err", "s": text}``, and the candidate's monitor's findings
``{"fnd": [code, detail]}``. Either side may call the other while it waits
for a reply (the candidate calls a ``key=`` function the test passed), so :meth:`Endpoint.call`
serves incoming requests until its own reply arrives; a reply to an abandoned call (a test
timed out meanwhile) is dropped by its id.

Everything read is bounded (frame size) and checked (a JSON object); a peer that sends
anything else, or goes away, ends the channel with :class:`ChannelClosed`.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import socket
import struct
from collections.abc import Callable
from typing import Any

_HEADER = struct.Struct(">I")
#: Largest frame either side accepts: a value larger than this cannot cross.
MAX_FRAME = 64 * 1024 * 1024
#: Bytes read from the socket at a time.
_CHUNK = 65536


class ChannelClosed(Exception):
    """The peer went away (``forged`` false), or sent something that is not a frame of this
    protocol (``forged`` true: something wrote to the channel that is not the other side)."""

    def __init__(self, why: str, *, forged: bool = False) -> None:
        super().__init__(why)
        self.forged = forged


class RemoteError(Exception):
    """The peer answered a call with an error; ``error`` is its encoded description."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(str(error.get("msg", "")))
        self.error = error


class Endpoint:
    """One end of the channel. ``serve(message)`` answers the peer's requests; it returns
    the reply value or raises, and the endpoint sends the reply.

    Example::

        end = Endpoint(sock, serve=handle, encode_error=describe)
        value = end.call({"op": "call", "target": ..., "args": [...]})
    """

    def __init__(
        self,
        sock: socket.socket,
        serve: Callable[[dict[str, Any]], Any],
        encode_error: Callable[[BaseException], dict[str, Any]],
        on_output: Callable[[str, str], None] | None = None,
        *,
        catch: tuple[type[BaseException], ...] = (Exception,),
        on_reply: Callable[[dict[str, Any]], None] | None = None,
        on_finding: Callable[[str, str], None] | None = None,
        max_frame: int = MAX_FRAME,
    ) -> None:
        self.sock = sock
        self.serve = serve
        self.encode_error = encode_error
        self.on_output = on_output
        #: What a failing request may raise and still be answered: the candidate's side
        #: answers everything; the test process lets its own BaseExceptions (a test's
        #: timeout, pytest.fail from a callback) end the call instead.
        self.catch = catch
        self.on_reply = on_reply
        self.on_finding = on_finding
        self.max_frame = max_frame
        self.closed: str | None = None
        self._ids = itertools.count(1)
        self._buffer = bytearray()
        self._chunk = memoryview(bytearray(_CHUNK))

    # -- sending -----------------------------------------------------------------------------

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message, ensure_ascii=True, allow_nan=False, separators=(",", ":"))
        data = body.encode("ascii")
        if len(data) > self.max_frame:
            raise ValueError(
                f"a value of {len(data)} bytes is too large to cross (limit {self.max_frame})"
            )
        try:
            self.sock.sendall(_HEADER.pack(len(data)) + data)
        except OSError as exc:
            raise self._close(
                f"the other process is gone ({exc.strerror or exc})", forged=False
            ) from None

    # -- receiving ---------------------------------------------------------------------------

    def receive(self) -> dict[str, Any]:
        """The next frame, whole and parsed."""
        if self.closed is not None:
            raise ChannelClosed(self.closed)
        while True:
            if len(self._buffer) >= _HEADER.size:
                (length,) = _HEADER.unpack_from(self._buffer)
                if length > self.max_frame:
                    raise self._close(f"a frame of {length} bytes (limit {self.max_frame})")
                end = _HEADER.size + length
                if len(self._buffer) >= end:
                    body = bytes(self._buffer[_HEADER.size : end])
                    del self._buffer[:end]
                    return self._parse(body)
            try:
                # Into a buffer kept for the purpose: recv(n) allocates n bytes each time, and
                # a large n costs more than the round trip itself (page faults on each call).
                got = self.sock.recv_into(self._chunk)
            except OSError as exc:
                raise self._close(
                    f"the other process is gone ({exc.strerror or exc})", forged=False
                ) from None
            if not got:
                raise self._close("the other process ended", forged=False)
            self._buffer += self._chunk[:got]

    def _parse(self, body: bytes) -> dict[str, Any]:
        try:
            message = json.loads(body.decode("ascii"), parse_constant=_no_constant)
        except (ValueError, RecursionError, UnicodeDecodeError):
            raise self._close("a frame that is not JSON") from None
        if type(message) is not dict:
            raise self._close("a frame that is not a JSON object")
        return message

    def _close(self, why: str, *, forged: bool = True) -> ChannelClosed:
        self.closed = why
        return ChannelClosed(why, forged=forged)

    # -- calling and serving -----------------------------------------------------------------

    def call(self, request: dict[str, Any]) -> Any:
        """Send ``request`` and wait for its reply, serving the peer's requests meanwhile. A
        call abandoned by an exception of this side (a test's timeout, say) closes the
        channel: the peer is still busy with it, and is replaced."""
        ident = next(self._ids)
        self.send({**request, "q": ident})
        try:
            return self._wait_for(ident)
        except (ChannelClosed, RemoteError):
            raise
        except BaseException:
            self._close("a call was abandoned", forged=False)
            with contextlib.suppress(OSError):
                self.sock.close()
            raise

    def _wait_for(self, ident: int) -> Any:
        while True:
            message = self.receive()
            if "r" in message:
                if message["r"] != ident:
                    continue  # the reply to a call abandoned earlier
                if self.on_reply is not None:
                    self.on_reply(message)
                if "e" in message:
                    error = message["e"]
                    raise RemoteError(error if type(error) is dict else {"msg": str(error)[:200]})
                return message.get("v")
            self.dispatch(message)

    def dispatch(self, message: dict[str, Any]) -> None:
        """Handle one incoming frame that is not the reply being waited for."""
        if "o" in message:
            if self.on_output is not None and type(message.get("s")) is str:
                self.on_output(str(message["o"]), message["s"])
            return
        if "fnd" in message:
            found = message["fnd"]
            if self.on_finding is not None and type(found) is list and len(found) == 2:
                self.on_finding(str(found[0])[:60], str(found[1])[:300])
            return
        ident = message.get("q")
        if type(ident) is not int:
            raise self._close("a frame that is neither a request, a reply nor output")
        try:
            value = self.serve(message)
        except self.catch as exc:  # the peer's request failed: that is the peer's answer
            self.reply({"r": ident, "e": self.encode_error(exc)})
            return
        self.reply({"r": ident, "v": value})

    def reply(self, message: dict[str, Any]) -> None:
        """Send a reply (the candidate's side first flushes what the call printed)."""
        self.send(message)

    def close(self) -> None:
        self.closed = self.closed or "closed"
        with contextlib.suppress(OSError):
            self.sock.close()


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def socket_from_fd(fd: int) -> socket.socket:
    sock = socket.socket(fileno=fd)
    sock.setblocking(True)
    os.set_inheritable(fd, False)
    return sock
