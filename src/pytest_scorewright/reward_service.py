"""``scorewright serve``: candidates scored over HTTP, for a trainer on another machine.

The embedded server (the standard library's threading HTTP server: nothing else to install or
run) answers:

- ``GET /healthz``: ``{"ok": true, "tasks": [...]}``;
- ``POST /score`` with ``{"task": NAME, "source": CODE}`` (``source`` may be a completion: its
  last fenced code block is scored): ``{"reward": 0.85, "verdict": "failed", ...numbers}``;
  a candidate that could not be scored for a reason of ours: ``"reward": null`` with the
  reason (``"verdict": "not_scored"``), never 0.0.

Tasks are a tasks directory (pytest_scorewright/task_dirs.py), each prepared when first asked
for. What a caller learns: the reward, the verdict and pass rates, never a held-out test's
name, input or message. Who may call: with ``SCOREWRIGHT_TOKEN`` set, only a request with
``Authorization: Bearer <token>`` (compared in constant time); without one the server
listens on the loopback only, and refuses to start on another address. A body over
:data:`MAX_BODY` bytes, malformed JSON or UTF-8, a missing field, a bad or unknown task name
are each a status with a one-line ``error``.

At most ``in_flight`` candidates are scored at once (by default the CPUs this process may use:
each candidate's runs take about one): a request beyond them is answered at once with ``429``
and ``Retry-After``, rather than queueing without bound behind a slow batch.

Not yet (issue 44): request ids and a result store, the trainers' compatible endpoints
(NeMo Gym's ``/verify``, OpenRLHF's ``/get_reward``), metrics.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pytest_scorewright.errors import ConfigError, InfrastructureError
from pytest_scorewright.task_dirs import FITNESS, TaskDirs, check_name, reward_answer
from pytest_scorewright.verifiers import extract_code, judged

#: The environment variable holding the bearer token callers must present.
TOKEN_ENV = "SCOREWRIGHT_TOKEN"  # noqa: S105 - a variable's name, not a secret
#: Largest request body read, in bytes: a program, not a data set.
MAX_BODY = 1 << 20
#: Most of a larger body read and dropped before the 413 (beyond it the connection is closed).
DRAIN_MAX = 8 * MAX_BODY


class RewardServer(ThreadingHTTPServer):
    """The server: its tasks and its token (None: loopback only)."""

    daemon_threads = True

    def __init__(
        self, address: tuple[str, int], tasks: TaskDirs, token: str | None, in_flight: int
    ) -> None:
        if token is None and not _loopback(address[0]):
            raise ConfigError(
                f"serving on {address[0]} beyond the loopback needs a token: set {TOKEN_ENV}"
            )
        if in_flight < 1:
            raise ConfigError(f"in_flight must be 1 or more, not {in_flight}")
        self.tasks = tasks
        self.token = token
        self.slots = threading.BoundedSemaphore(in_flight)
        super().__init__(address, _Handler)


def serve(
    tasks_dir: str, host: str = "127.0.0.1", port: int = 8000, in_flight: int | None = None
) -> RewardServer:
    """A server for the tasks in ``tasks_dir`` (not yet serving: call ``serve_forever``);
    ``in_flight``: candidates scored at once (default: the CPUs this process may use)."""
    if not os.path.isdir(tasks_dir):
        raise ConfigError(f"tasks directory {tasks_dir!r} is not a directory")
    slots = in_flight if in_flight is not None else len(os.sched_getaffinity(0))
    token = os.environ.get(TOKEN_ENV) or None
    return RewardServer((host, port), TaskDirs(tasks_dir), token, slots)


def score_request(tasks: TaskDirs, body: dict[str, Any]) -> dict[str, Any]:
    """The answer to one ``/score`` request's body (a ConfigError for a bad one)."""
    task = check_name(body.get("task"))
    source = body.get("source")
    if not isinstance(source, str):
        raise ConfigError("the body needs 'source': the candidate's code, a string")
    evaluator = tasks.evaluator(task)
    result = evaluator.score_source(extract_code(source))
    try:
        _, score = judged(result, FITNESS)
    except InfrastructureError as exc:
        return {"reward": None, "verdict": "not_scored", "reason": str(exc)}
    answer = reward_answer(result, score)
    return {"reward": answer.pop("score"), **answer}


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class _Handler(BaseHTTPRequestHandler):
    server: RewardServer
    server_version = "scorewright"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:
        return  # no request line on stderr: paths and bodies are the caller's data

    def do_GET(self) -> None:
        if not self._allowed():
            return
        if self.path != "/healthz":
            self._send(404, {"error": "no such path; use GET /healthz or POST /score"})
            return
        self._send(200, {"ok": True, "tasks": self.server.tasks.names()})

    def do_POST(self) -> None:
        if not self._allowed():
            return
        if self.path != "/score":
            self._send(404, {"error": "no such path; use POST /score"})
            return
        body = self._body()
        if body is None:
            return
        if not self.server.slots.acquire(blocking=False):
            self._send(429, {"error": "every scoring slot is busy; retry"}, {"Retry-After": "1"})
            return
        try:
            self._send(200, score_request(self.server.tasks, body))
        except ConfigError as exc:
            status = 404 if str(exc).startswith("no task") else 400
            self._send(status, {"error": str(exc).splitlines()[0][:300]})
        finally:
            self.server.slots.release()

    def _allowed(self) -> bool:
        token = self.server.token
        if token is None:
            return True
        given = self.headers.get("Authorization", "")
        if hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
            return True
        self._send(401, {"error": "a bearer token is needed: Authorization: Bearer <token>"})
        return False

    def _body(self) -> dict[str, Any] | None:
        length = self.headers.get("Content-Length", "")
        if not length.isdigit():
            self._send(411, {"error": "the request needs a Content-Length"})
            return None
        if int(length) > MAX_BODY:
            # Read what was sent (up to a bound) before answering: a client still writing its
            # body to a closed socket sees a broken pipe instead of the 413.
            left = min(int(length), DRAIN_MAX)
            while left > 0 and (chunk := self.rfile.read(min(left, 1 << 16))):
                left -= len(chunk)
            self._send(413, {"error": f"the body is over {MAX_BODY} bytes"})
            self.close_connection = True
            return None
        raw = self.rfile.read(int(length))
        try:
            body = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            self._send(400, {"error": f"the body is not UTF-8 JSON ({type(exc).__name__})"})
            return None
        if not isinstance(body, dict):
            self._send(400, {"error": "the body must be a JSON object"})
            return None
        return body

    def _send(
        self, status: int, answer: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        data = json.dumps(answer, allow_nan=False).encode()
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
