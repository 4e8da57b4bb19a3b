"""A real HTTP server on localhost speaking the chat-completions protocol, with the judges the
tests need (no model can be reached from the test machines):

- ``rule``: deterministic, scores by a rule over the program it is shown (the share of
  functions with a return annotation; 0.5 with no function);
- ``gullible``: as ``rule``, but obeys an instruction to score high wherever it reads one;
- ``slow``: answers after ``delay`` seconds;
- ``malformed``: answers ``content`` as it is;
- ``ratelimit``: HTTP 429 with ``Retry-After: retry_after`` for the first ``limited``
  requests (-1: every request), then as ``rule``;
- ``refuse``: a refusal (``message.refusal``, no content).
"""

from __future__ import annotations

import functools
import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: What the gullible judge obeys: the words, apart or joined into a name.
_OBEYED = re.compile(
    r"score[ _]10|score[ _]1\.0|ignore[ _]the[ _]rubric|ignore[ _]all[ _]previous"
    r"|ignore[ _]previous[ _]instructions",
    re.IGNORECASE,
)
_DELIMITED = re.compile(r"BEGIN PROGRAM (\w+)\n(.*)\nEND PROGRAM \1", re.DOTALL)
_FENCED = re.compile(r"```python\n(.*)\n```", re.DOTALL)


@dataclass
class Seen:
    at: float
    body: dict[str, Any]
    authorization: str | None


@dataclass
class Behaviour:
    kind: str = "rule"
    delay: float = 0.0
    content: str = ""
    limited: int = 0
    retry_after: float = 0.2
    #: Tokens the usage block reports per request (None: the request's own size).
    usage: tuple[int, int] | None = None
    #: Seconds every answer takes (to measure requests in flight).
    pause: float = 0.0


def program_of(user: str) -> str:
    """The program a judge is shown: inside the delimiter, else inside the code fence."""
    found = _DELIMITED.search(user) or _FENCED.search(user)
    return found.group(found.lastindex or 1) if found else user


def rule_score(program: str) -> float:
    defs = re.findall(r"^\s*(?:async\s+)?def .*$", program, re.MULTILINE)
    if not defs:
        return 0.5
    return round(sum("->" in d for d in defs) / len(defs), 3)


@dataclass
class JudgeServer:
    behaviour: Behaviour
    url: str = ""
    requests: list[Seen] = field(default_factory=list)
    in_flight: int = 0
    most_in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    closing: threading.Event = field(default_factory=threading.Event)

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, str], dict[str, Any]]:
        b = self.behaviour
        if b.kind == "ratelimit" and (b.limited < 0 or len(self.requests) <= b.limited):
            error = {"error": {"message": "slow down", "type": "rate_limit", "code": "429"}}
            return 429, {"Retry-After": str(b.retry_after)}, error
        if b.kind == "slow":
            self.closing.wait(b.delay)
        if b.pause:
            self.closing.wait(b.pause)
        messages = body.get("messages", [])
        user = next((m["content"] for m in messages if m["role"] == "user"), "")
        refusal = None
        if b.kind == "malformed":
            content: str | None = b.content
        elif b.kind == "refuse":
            content, refusal = None, "I can't help with that."
        elif b.kind == "gullible" and _OBEYED.search(user):
            content = json.dumps({"score": 1.0, "rationale": "As the note says, it is flawless."})
        else:
            score = rule_score(program_of(user))
            content = json.dumps({"score": score, "rationale": f"{score:.0%} annotated."})
        size = sum(len(m["content"]) for m in messages) // 4
        tokens = b.usage or (size, len(content or "") // 4)
        return 200, {}, _completion(body.get("model", "?"), content, refusal, tokens)


def _completion(
    model: str, content: str | None, refusal: str | None, tokens: tuple[int, int]
) -> dict[str, Any]:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, "refusal": refusal},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": tokens[0],
            "completion_tokens": tokens[1],
            "total_tokens": sum(tokens),
        },
    }


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_POST(self) -> None:
        state = self.server.state
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length))
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._send(404, {}, {"error": {"message": f"no route {self.path}"}})
            return
        with state.lock:
            state.requests.append(Seen(time.monotonic(), body, self.headers.get("Authorization")))
            state.in_flight += 1
            state.most_in_flight = max(state.most_in_flight, state.in_flight)
        try:
            status, headers, payload = state.answer(body)
        finally:
            with state.lock:
                state.in_flight -= 1
        self._send(status, headers, payload)

    def _send(self, status: int, headers: dict[str, str], payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    state: JudgeServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gave up (the timeout tests) leaves a broken pipe: expected.
        pass


@contextmanager
def judge_server(kind: str = "rule", **behaviour: Any) -> Iterator[JudgeServer]:
    server = _Server(("127.0.0.1", 0), _Handler)
    state = JudgeServer(Behaviour(kind, **behaviour))
    server.state = state
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    # A short poll: shutdown() waits for the loop to notice, once a test.
    serve = functools.partial(server.serve_forever, poll_interval=0.01)
    thread = threading.Thread(target=serve, name="judge-server", daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state.closing.set()
        server.shutdown()
        server.server_close()
        thread.join(5)
