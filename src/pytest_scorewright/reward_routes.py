"""What the reward service answers, whichever server carries the request (the embedded one,
reward_http.py, or an ASGI server, reward_asgi.py), in the server's process: the token check,
the paths, the body's checks and every error's status and one-line message. A wire reads the
request, asks here, and writes the :class:`Reply` back; so both wires answer alike, byte for
byte."""

from __future__ import annotations

import dataclasses
import hmac
import json
from collections.abc import Callable, Mapping
from typing import Any

import pytest_scorewright.reward_shapes as shapes
from pytest_scorewright.errors import ConfigError
from pytest_scorewright.reward_core import RewardService, score_item
from pytest_scorewright.reward_store import Conflict

#: Largest request body read, in bytes: a program, not a data set (a batch: this times 16).
MAX_BODY = 1 << 20
#: Most of a larger body read and dropped before the 413 (beyond it the connection is closed).
DRAIN_MAX = 8 * MAX_BODY
#: The paths served (metrics count these; anything else is "other").
PATHS = ("/score", "/verify", "/get_reward", "/batch_reward", "/healthz", "/metrics")
JSON = "application/json"


@dataclasses.dataclass(frozen=True)
class Reply:
    """A status, a body and its type, and any headers beyond those."""

    status: int
    data: bytes
    kind: str = JSON
    headers: Mapping[str, str] = dataclasses.field(default_factory=dict)


def json_reply(status: int, answer: dict[str, Any], headers: Mapping[str, str] = {}) -> Reply:
    return Reply(status, json.dumps(answer, allow_nan=False).encode(), JSON, dict(headers))


def counted(service: RewardService, path: str, reply: Reply) -> Reply:
    """``reply``, counted in the metrics under its path and status (before it is sent)."""
    shown = path if path in PATHS else "other"
    service.metrics.count("scorewright_requests_total", path=shown, status=str(reply.status))
    return reply


def refused(service: RewardService, authorization: str) -> Reply | None:
    """A 401 where the service has a token and ``authorization`` does not carry it."""
    token = service.token
    if token is None or hmac.compare_digest(authorization.encode(), f"Bearer {token}".encode()):
        return None
    return json_reply(401, {"error": "a bearer token is needed: Authorization: Bearer <token>"})


def answer_get(service: RewardService, path: str) -> Reply:
    if path == "/healthz":
        return json_reply(200, {"ok": True, "tasks": service.tasks.names()})
    if path == "/metrics":
        return Reply(200, service.metrics.text().encode(), "text/plain; version=0.0.4")
    return json_reply(404, {"error": "no such path; use GET /healthz or GET /metrics"})


def body_cap(path: str) -> int | None:
    """The largest body a POST to ``path`` may send; None: no such path."""
    if path in ("/score", "/verify"):
        return MAX_BODY
    if path in ("/get_reward", "/batch_reward"):
        return 16 * MAX_BODY
    return None


def no_such_path() -> Reply:
    return json_reply(404, {"error": f"no such path; POST one of {', '.join(PATHS[:4])}"})


def no_length() -> Reply:
    return json_reply(411, {"error": "the request needs a Content-Length"})


def too_large(cap: int) -> Reply:
    return json_reply(413, {"error": f"the body is over {cap} bytes"})


def answer_post(service: RewardService, path: str, raw: bytes) -> Reply:
    """The answer to a POST whose body (within :func:`body_cap`) is ``raw``."""
    try:
        body = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        return json_reply(400, {"error": f"the body is not UTF-8 JSON ({type(exc).__name__})"})
    if not isinstance(body, dict):
        return json_reply(400, {"error": "the body must be a JSON object"})
    answer_of: dict[str, Callable[[RewardService, dict[str, Any]], dict[str, Any]]] = {
        "/score": _score,
        "/verify": _verify,
        "/get_reward": _get_reward,
        "/batch_reward": _batch,
    }
    if path not in answer_of:
        return no_such_path()
    try:
        return json_reply(200, answer_of[path](service, body))
    except _Busy:
        return json_reply(429, {"error": "every scoring slot is busy; retry"}, {"Retry-After": "1"})
    except _Unavailable as exc:
        said = {"error": str(exc), "failure_reason": str(exc)}
        return json_reply(503, said, {"Retry-After": "5"})
    except Conflict as exc:
        return json_reply(409, {"error": str(exc)})
    except TimeoutError as exc:
        return json_reply(503, {"error": str(exc)}, {"Retry-After": "5"})
    except ConfigError as exc:
        status = 404 if str(exc).startswith("no task") else 400
        return json_reply(status, {"error": str(exc).splitlines()[0][:300]})
    except Exception as exc:  # a bug of ours: said in one line, and the service goes on
        return json_reply(500, {"error": f"internal error ({type(exc).__name__}); retry"})


class _Unavailable(Exception):
    """Some reward could not be measured: the trainers' shapes have no room for that."""


class _Busy(Exception):
    """Every scoring slot is taken."""


def _one(service: RewardService, item: shapes.Item) -> dict[str, Any]:
    service.tasks.evaluator(item[0])  # an unknown task: a ConfigError, a 404
    answer = service.score(item, wait=False)
    if answer is None:
        raise _Busy
    return answer


def _score(service: RewardService, body: dict[str, Any]) -> dict[str, Any]:
    return _one(service, score_item(body))


def _verify(service: RewardService, body: dict[str, Any]) -> dict[str, Any]:
    answer = _one(service, shapes.verify_item(body))
    if answer["reward"] is None:
        raise _Unavailable(f"not scored: {answer.get('reason')}")
    return shapes.verify_answer(body, answer)


def _get_reward(service: RewardService, body: dict[str, Any]) -> dict[str, Any]:
    answers = _all(service, shapes.get_reward_items(body))
    rewards = [a["reward"] for a in answers]
    return {"rewards": rewards, "scores": rewards, "verdicts": [a["verdict"] for a in answers]}


def _batch(service: RewardService, body: dict[str, Any]) -> dict[str, Any]:
    answers = _all(service, shapes.batch_items(body), unavailable_ok=True)
    return {"rewards": [a["reward"] for a in answers], "results": answers}


def _all(
    service: RewardService, items: list[shapes.Item], unavailable_ok: bool = False
) -> list[dict[str, Any]]:
    for task in {item[0] for item in items}:
        service.tasks.evaluator(task)
    answers = service.score_all(items)
    missing = [a for a in answers if a.get("reward") is None]
    if missing and not unavailable_ok:
        raise _Unavailable(f"{len(missing)} not scored: {missing[0].get('reason')}")
    return answers
