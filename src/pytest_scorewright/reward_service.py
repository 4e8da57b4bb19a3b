"""``scorewright serve``: candidates scored over HTTP, for a trainer on another machine.

The embedded server (the standard library's threading HTTP server: nothing else to install or
run) answers:

- ``POST /score`` with ``{"task": NAME, "source": CODE, "id": ID?}`` (``source`` may be a
  completion: its last fenced code block is scored): ``{"reward": 0.85, "verdict": "failed",
  ...numbers}``; a candidate that could not be scored for a reason of ours: ``"reward": null``
  with the reason (``"verdict": "not_scored"``), never 0.0;
- the trainers' shapes (reward_shapes.py): NeMo Gym's ``POST /verify``, OpenRLHF's
  ``POST /get_reward``, and ``POST /batch_reward``;
- ``GET /healthz`` (``{"ok": true, "tasks": [...]}``) and ``GET /metrics`` (Prometheus text).

Tasks are a tasks directory (pytest_scorewright/task_dirs.py), each prepared when first asked
for. What a caller learns: the reward, the verdict and pass rates, never a held-out test's
name, input or message. Who may call: with ``SCOREWRIGHT_TOKEN`` set, only a request with
``Authorization: Bearer <token>`` (compared in constant time); without one the server
listens on the loopback only, and refuses to start on another address. A body over
:data:`MAX_BODY` bytes, malformed JSON or UTF-8, a missing field, a bad or unknown task name
are each a status with a one-line ``error``.

A request with an ``id`` is answered once: its answer is kept in the result store
(reward_store.py, SQLite), so asking again, or after a restart, gets the same answer, and a
request a killed server left unfinished is scored again when it starts. At most
``in_flight`` candidates are scored at once (by default the CPUs this process may use: each
candidate's runs take about one) and up to ``queue`` more requests wait their turn, first come
first served; a request beyond those is answered at once with ``429`` and ``Retry-After``; a
batch's items wait for a slot. Past four at once they are scored in pipeline processes of
the service's own, or on a Ray cluster's actors (reward_scoring.py). On SIGTERM the server stops
taking requests and finishes those it has (``scorewright serve``).
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import os
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest_scorewright.reward_shapes as shapes
from pytest_scorewright.errors import ConfigError, InfrastructureError
from pytest_scorewright.fanout.pipelines import JOBS_PER_PIPELINE
from pytest_scorewright.reward_scoring import PipelineScoring, RayScoring, Scoring
from pytest_scorewright.reward_store import Conflict, SqliteStore, Store, check_id, recorded
from pytest_scorewright.task_dirs import FITNESS, TaskDirs, check_name, reward_answer
from pytest_scorewright.verifiers import extract_code, judged

#: The environment variable holding the bearer token callers must present.
TOKEN_ENV = "SCOREWRIGHT_TOKEN"  # noqa: S105 - a variable's name, not a secret
#: Largest request body read, in bytes: a program, not a data set (a batch: this times 16).
MAX_BODY = 1 << 20
#: Most of a larger body read and dropped before the 413 (beyond it the connection is closed).
DRAIN_MAX = 8 * MAX_BODY
#: The paths served (metrics count these; anything else is "other").
PATHS = ("/score", "/verify", "/get_reward", "/batch_reward", "/healthz", "/metrics")
#: A connection that sends nothing for this long is closed (a client that stalls mid-body
#: must not hold a thread, nor a drain, for ever).
IDLE_S = 60


class RewardServer(ThreadingHTTPServer):
    """The server: its tasks, its token (None: loopback only), its store and counters."""

    # Request threads are joined on close: a drain finishes what it has.
    daemon_threads = False
    block_on_close = True
    # The listen backlog: the standard library's 5 reset connections from 32 clients that
    # connect at once (benchmarks/serve_load.py lost 7 of 2,000 requests so).
    request_queue_size = 1024

    def __init__(
        self,
        address: tuple[str, int],
        tasks: TaskDirs,
        token: str | None,
        in_flight: int,
        store: Store,
        queue: int | None = None,
        elsewhere: Scoring | None = None,
    ) -> None:
        if token is None and not _loopback(address[0]):
            raise ConfigError(
                f"serving on {address[0]} beyond the loopback needs a token: set {TOKEN_ENV}"
            )
        if in_flight < 1:
            raise ConfigError(f"in_flight must be 1 or more, not {in_flight}")
        self.tasks = tasks
        self.token = token
        self.store = store
        self.elsewhere = elsewhere
        self.metrics = Metrics()
        self.slots = Admission(in_flight, queue if queue is not None else default_queue(in_flight))
        self.pool = ThreadPoolExecutor(in_flight, thread_name_prefix="scorewright-batch")
        super().__init__(address, _Handler)
        # What a killed predecessor left unfinished, scored again now (a retry waits for it).
        threading.Thread(target=self._recover, name="scorewright-recover", daemon=True).start()

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A connection that broke mid-answer (the client gave up): no traceback of ours on
        # the service's stderr; the request's own errors are answered in do_POST.
        return

    def score(
        self, item: shapes.Item, *, wait: bool, recovering: bool = False
    ) -> dict[str, Any] | None:
        """One candidate's answer (kept under its id); None where no slot is free and
        ``wait`` is false."""
        task, source, rid = item
        with recorded(self.store, rid, task, source, recovering=recovering) as held:
            if held.stored:
                self.metrics.count("scorewright_stored_answers_total")
                answer: dict[str, Any] = held.answer
                return answer
            if not self.slots.acquire(wait=wait):
                return None
            try:
                answer = self.metrics.timed(
                    lambda: score_one(self.tasks, task, source, self.elsewhere)
                )
            finally:
                self.slots.release()
            if answer["reward"] is not None:  # a failure of ours is scored again if asked
                held.answer = answer
            return answer

    def score_all(self, items: list[shapes.Item]) -> list[dict[str, Any]]:
        return list(self.pool.map(lambda item: self.score(item, wait=True) or {}, items))

    def server_close(self) -> None:
        super().server_close()  # joins the request threads: every answer is sent
        self.pool.shutdown()
        if self.elsewhere is not None:
            self.elsewhere.close()
        self.store.close()
        self.tasks.close()

    def _recover(self) -> None:
        for rid, task, source in self.store.unfinished():
            try:
                self.score((task, source, rid), wait=True, recovering=True)
            except Exception:  # a task gone since: asked again, it says so
                self.store.abandon(rid)


def default_queue(in_flight: int) -> int:
    """Requests that wait their turn by default: a trainer's batch of concurrent requests
    (32 clients at once queued rather than turned away: a retry loop starves some of them)."""
    return max(64, 4 * in_flight)


class Admission:
    """``slots`` candidates scored at once; up to ``queue`` more wait their turn, first come
    first served (a retry loop against a bare semaphore starved some clients for minutes:
    p99 114 s against p50 0.35 s in benchmarks/serve_load.py); beyond them, turned away."""

    def __init__(self, slots: int, queue: int) -> None:
        self._slots, self._queue = slots, queue
        self._cond = threading.Condition()
        self._busy = 0
        self._next = self._served = 0  # tickets given out, and the next one served

    def acquire(self, *, wait: bool) -> bool:
        """A slot now or, with ``wait`` or room in the queue, in turn; False: turned away."""
        with self._cond:
            waiting = self._next - self._served
            if not wait and self._busy >= self._slots and waiting >= self._queue:
                return False
            ticket = self._next
            self._next += 1
            while ticket != self._served or self._busy >= self._slots:
                self._cond.wait()
            self._served += 1
            self._busy += 1
            self._cond.notify_all()
            return True

    def state(self) -> tuple[int, int]:
        """Candidates being scored, and requests waiting their turn, now."""
        with self._cond:
            return self._busy, self._next - self._served

    def release(self) -> None:
        with self._cond:
            self._busy -= 1
            self._cond.notify_all()


class Metrics:
    """Counters in Prometheus's text format (``GET /metrics``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()
        self._seconds = 0.0
        self._in_flight = 0

    def count(self, name: str, **labels: str) -> None:
        shown = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
        with self._lock:
            self._counts[f"{name}{{{shown}}}" if shown else name] += 1

    def timed(self, score: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        with self._lock:
            self._in_flight += 1
        started = time.monotonic()
        try:
            answer = score()
        finally:
            with self._lock:
                self._in_flight -= 1
                self._seconds += time.monotonic() - started
        self.count("scorewright_scored_total", verdict=str(answer.get("verdict")))
        return answer

    def text(self) -> str:
        with self._lock:
            counts, seconds, in_flight = dict(self._counts), self._seconds, self._in_flight
        scored = sum(n for k, n in counts.items() if k.startswith("scorewright_scored_total"))
        lines = [
            "# TYPE scorewright_requests_total counter",
            "# TYPE scorewright_scored_total counter",
            "# TYPE scorewright_stored_answers_total counter",
            *(f"{key} {n}" for key, n in sorted(counts.items())),
            "# TYPE scorewright_scoring_seconds summary",
            f"scorewright_scoring_seconds_sum {seconds:.6f}",
            f"scorewright_scoring_seconds_count {scored}",
            "# TYPE scorewright_in_flight gauge",
            f"scorewright_in_flight {in_flight}",
        ]
        return "\n".join(lines) + "\n"


def serve(
    tasks_dir: str,
    host: str = "127.0.0.1",
    port: int = 8000,
    in_flight: int | None = None,
    store: str = ":memory:",
    queue: int | None = None,
    ray: str | None = None,
    ray_actors: int = 2,
    pipelines: bool | None = None,
) -> RewardServer:
    """A server for the tasks in ``tasks_dir`` (not yet serving: call ``serve_forever``);
    ``in_flight``: candidates scored at once (default: the CPUs this process may use);
    ``queue``: requests waiting their turn beyond them (default :func:`default_queue`);
    ``store``: the SQLite file its answers are kept in (``:memory:``: this process's life);
    ``ray``: a Ray cluster's address (``auto``: the one this machine runs) to score on, with
    ``ray_actors`` actors of one CPU (then ``in_flight`` defaults to as many);
    ``pipelines``: score in pipeline processes rather than in this one (default: where
    ``in_flight`` is more than one process keeps fed, fanout/pipelines.py)."""
    if not os.path.isdir(tasks_dir):
        raise ConfigError(f"tasks directory {tasks_dir!r} is not a directory")
    default = ray_actors if ray is not None else len(os.sched_getaffinity(0))
    slots = in_flight if in_flight is not None else default
    token = os.environ.get(TOKEN_ENV) or None
    if queue is not None and queue < 0:
        raise ConfigError(f"queue must be 0 or more, not {queue}")
    elsewhere: Scoring | None = None
    if ray is not None:
        elsewhere = RayScoring(ray, ray_actors, 1.0)
    elif pipelines if pipelines is not None else slots > JOBS_PER_PIPELINE:
        elsewhere = PipelineScoring(slots)
    kept = SqliteStore(store)
    return RewardServer((host, port), TaskDirs(tasks_dir), token, slots, kept, queue, elsewhere)


def score_one(
    tasks: TaskDirs, task: str, source: str, elsewhere: Scoring | None = None
) -> dict[str, Any]:
    """One candidate's answer: the reward and the loop-safe numbers; ``reward: None`` with
    the reason where it could not be scored for a reason of ours. Scored ``elsewhere``
    (Ray's actors, pipeline processes) where given, else in this process."""
    scorer = elsewhere.scorer(tasks, task) if elsewhere is not None else tasks.evaluator(task)
    result = scorer.score_source(extract_code(source))
    try:
        _, score = judged(result, FITNESS)
    except InfrastructureError as exc:
        return {"reward": None, "verdict": "not_scored", "reason": str(exc)}
    answer = reward_answer(result, score)
    return {"reward": answer.pop("score"), **answer}


def score_request(tasks: TaskDirs, body: dict[str, Any]) -> dict[str, Any]:
    """The answer to one ``/score`` request's body, unkept (a ConfigError for a bad one)."""
    task, source, _ = _score_item(body)
    tasks.evaluator(task)  # an unknown task is a ConfigError before anything runs
    return score_one(tasks, task, source)


def _score_item(body: dict[str, Any]) -> shapes.Item:
    task = check_name(body.get("task"))
    source = body.get("source")
    if not isinstance(source, str):
        raise ConfigError("the body needs 'source': the candidate's code, a string")
    return task, source, check_id(body.get("id"))


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class _Unavailable(Exception):
    """Some reward could not be measured: the trainers' shapes have no room for that."""


class _Busy(Exception):
    """Every scoring slot is taken."""


class _Handler(BaseHTTPRequestHandler):
    server: RewardServer
    server_version = "scorewright"
    sys_version = ""
    timeout = IDLE_S

    def log_message(self, format: str, *args: Any) -> None:
        return  # no request line on stderr: paths and bodies are the caller's data

    def do_GET(self) -> None:
        if not self._allowed():
            return
        if self.path == "/healthz":
            self._send(200, {"ok": True, "tasks": self.server.tasks.names()})
        elif self.path == "/metrics":
            self._send_text(200, self.server.metrics.text())
        else:
            self._send(404, {"error": "no such path; use GET /healthz or GET /metrics"})

    def do_POST(self) -> None:
        if not self._allowed():
            return
        answer_of = {
            "/score": self._score,
            "/verify": self._verify,
            "/get_reward": self._get_reward,
            "/batch_reward": self._batch,
        }.get(self.path)
        if answer_of is None:
            self._send(404, {"error": f"no such path; POST one of {', '.join(PATHS[:4])}"})
            return
        body = self._body(MAX_BODY if self.path in ("/score", "/verify") else 16 * MAX_BODY)
        if body is None:
            return
        try:
            self._send(200, answer_of(body))
        except _Busy:
            self._send(429, {"error": "every scoring slot is busy; retry"}, {"Retry-After": "1"})
        except _Unavailable as exc:
            self._send(503, {"error": str(exc), "failure_reason": str(exc)}, {"Retry-After": "5"})
        except Conflict as exc:
            self._send(409, {"error": str(exc)})
        except TimeoutError as exc:
            self._send(503, {"error": str(exc)}, {"Retry-After": "5"})
        except ConfigError as exc:
            status = 404 if str(exc).startswith("no task") else 400
            self._send(status, {"error": str(exc).splitlines()[0][:300]})
        except Exception as exc:  # a bug of ours: said in one line, and the service goes on
            self._send(500, {"error": f"internal error ({type(exc).__name__}); retry"})

    # -- the shapes ------------------------------------------------------------------------

    def _one(self, item: shapes.Item) -> dict[str, Any]:
        self.server.tasks.evaluator(item[0])  # an unknown task: a ConfigError, a 404
        answer = self.server.score(item, wait=False)
        if answer is None:
            raise _Busy
        return answer

    def _score(self, body: dict[str, Any]) -> dict[str, Any]:
        return self._one(_score_item(body))

    def _verify(self, body: dict[str, Any]) -> dict[str, Any]:
        answer = self._one(shapes.verify_item(body))
        if answer["reward"] is None:
            raise _Unavailable(f"not scored: {answer.get('reason')}")
        return shapes.verify_answer(body, answer)

    def _get_reward(self, body: dict[str, Any]) -> dict[str, Any]:
        answers = self._all(shapes.get_reward_items(body))
        rewards = [a["reward"] for a in answers]
        return {"rewards": rewards, "scores": rewards, "verdicts": [a["verdict"] for a in answers]}

    def _batch(self, body: dict[str, Any]) -> dict[str, Any]:
        answers = self._all(shapes.batch_items(body), unavailable_ok=True)
        return {"rewards": [a["reward"] for a in answers], "results": answers}

    def _all(self, items: list[shapes.Item], unavailable_ok: bool = False) -> list[dict[str, Any]]:
        for task in {item[0] for item in items}:
            self.server.tasks.evaluator(task)
        answers = self.server.score_all(items)
        missing = [a for a in answers if a.get("reward") is None]
        if missing and not unavailable_ok:
            raise _Unavailable(f"{len(missing)} not scored: {missing[0].get('reason')}")
        return answers

    # -- the wire --------------------------------------------------------------------------

    def _allowed(self) -> bool:
        token = self.server.token
        if token is None:
            return True
        given = self.headers.get("Authorization", "")
        if hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
            return True
        self._send(401, {"error": "a bearer token is needed: Authorization: Bearer <token>"})
        return False

    def _body(self, cap: int) -> dict[str, Any] | None:
        length = self.headers.get("Content-Length", "")
        if not length.isdigit():
            self._send(411, {"error": "the request needs a Content-Length"})
            return None
        if int(length) > cap:
            # Read what was sent (up to a bound) before answering: a client still writing its
            # body to a closed socket sees a broken pipe instead of the 413.
            left = min(int(length), DRAIN_MAX)
            while left > 0 and (chunk := self.rfile.read(min(left, 1 << 16))):
                left -= len(chunk)
            self._send(413, {"error": f"the body is over {cap} bytes"})
            self.close_connection = True
            return None
        raw = self.rfile.read(int(length))
        try:
            body = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
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
        self._write(status, data, "application/json", headers)

    def _send_text(self, status: int, text: str) -> None:
        self._write(status, text.encode(), "text/plain; version=0.0.4", None)

    def _write(self, status: int, data: bytes, kind: str, headers: dict[str, str] | None) -> None:
        path = self.path if self.path in PATHS else "other"
        self.server.metrics.count("scorewright_requests_total", path=path, status=str(status))
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
