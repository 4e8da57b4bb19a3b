"""The embedded server of ``scorewright serve``, in the server's process: the standard
library's threading HTTP server (nothing else to install or run), one thread per connection,
carrying requests to reward_routes.py and its answers back."""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest_scorewright.reward_routes as routes
from pytest_scorewright.reward_core import RewardService

#: A connection that sends nothing for this long is closed (a client that stalls mid-body
#: must not hold a thread, nor a drain, for ever).
IDLE_S = 60


class RewardServer(ThreadingHTTPServer):
    """The embedded server of one :class:`RewardService`."""

    # Request threads are joined on close: a drain finishes what it has.
    daemon_threads = False
    block_on_close = True
    # The listen backlog: the standard library's 5 reset connections from 32 clients that
    # connect at once (benchmarks/serve_load.py lost 7 of 2,000 requests so).
    request_queue_size = 1024

    def __init__(self, address: tuple[str, int], service: RewardService) -> None:
        self.service = service
        super().__init__(address, _Handler)
        service.recover_in_background()

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A connection that broke mid-answer (the client gave up): no traceback of ours on
        # the service's stderr; the request's own errors are answered in reward_routes.py.
        return

    def server_close(self) -> None:
        super().server_close()  # joins the request threads: every answer is sent
        self.service.close()


class _Handler(BaseHTTPRequestHandler):
    server: RewardServer
    server_version = "scorewright"
    sys_version = ""
    timeout = IDLE_S

    def log_message(self, format: str, *args: Any) -> None:
        return  # no request line on stderr: paths and bodies are the caller's data

    def do_GET(self) -> None:
        if self._allowed():
            self._write(routes.answer_get(self.server.service, self.path))

    def do_POST(self) -> None:
        if not self._allowed():
            return
        cap = routes.body_cap(self.path)
        if cap is None:
            self._write(routes.no_such_path())
            return
        raw = self._body(cap)
        if raw is not None:
            self._write(routes.answer_post(self.server.service, self.path, raw))

    def _allowed(self) -> bool:
        refusal = routes.refused(self.server.service, self.headers.get("Authorization", ""))
        if refusal is not None:
            self._write(refusal)
        return refusal is None

    def _body(self, cap: int) -> bytes | None:
        length = self.headers.get("Content-Length", "")
        if not length.isdigit():
            self._write(routes.no_length())
            return None
        if int(length) > cap:
            # Read what was sent (up to a bound) before answering: a client still writing its
            # body to a closed socket sees a broken pipe instead of the 413.
            left = min(int(length), routes.DRAIN_MAX)
            while left > 0 and (chunk := self.rfile.read(min(left, 1 << 16))):
                left -= len(chunk)
            self._write(routes.too_large(cap))
            self.close_connection = True
            return None
        return self.rfile.read(int(length))

    def _write(self, reply: routes.Reply) -> None:
        routes.counted(self.server.service, self.path, reply)
        self.send_response(reply.status)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.send_header("Content-Type", reply.kind)
        self.send_header("Content-Length", str(len(reply.data)))
        self.end_headers()
        self.wfile.write(reply.data)
