"""``scorewright serve``: candidates scored over HTTP, for a trainer on another machine.

The embedded server (the standard library's threading HTTP server, reward_http.py: nothing else
to install or run), or with ``server="uvicorn"`` the same answers as an ASGI application on
uvicorn (reward_asgi.py, the extra ``pytest-scorewright[asgi]``), answers (reward_routes.py):

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

import os

from pytest_scorewright.errors import ConfigError
from pytest_scorewright.fanout.pipelines import JOBS_PER_PIPELINE
from pytest_scorewright.reward_asgi import AsgiServer
from pytest_scorewright.reward_core import (
    TOKEN_ENV,
    RewardService,
    Server,
    score_one,
    score_request,
)
from pytest_scorewright.reward_http import RewardServer
from pytest_scorewright.reward_routes import MAX_BODY
from pytest_scorewright.reward_scoring import PipelineScoring, RayScoring, Scoring
from pytest_scorewright.reward_store import SqliteStore
from pytest_scorewright.task_dirs import TaskDirs

__all__ = [
    "MAX_BODY",
    "TOKEN_ENV",
    "AsgiServer",
    "RewardServer",
    "RewardService",
    "Server",
    "score_one",
    "score_request",
    "serve",
]
#: The servers that can carry the service.
SERVERS = ("embedded", "uvicorn")


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
    server: str = "embedded",
) -> Server:
    """A server for the tasks in ``tasks_dir`` (not yet serving: call ``serve_forever``);
    ``in_flight``: candidates scored at once (default: the CPUs this process may use);
    ``queue``: requests waiting their turn beyond them (default :func:`default_queue`);
    ``store``: the SQLite file its answers are kept in (``:memory:``: this process's life);
    ``ray``: a Ray cluster's address (``auto``: the one this machine runs) to score on, with
    ``ray_actors`` actors of one CPU (then ``in_flight`` defaults to as many);
    ``pipelines``: score in pipeline processes rather than in this one (default: where
    ``in_flight`` is more than one process keeps fed, fanout/pipelines.py);
    ``server``: ``embedded`` (the standard library's) or ``uvicorn`` (an ASGI server)."""
    if server not in SERVERS:
        raise ConfigError(f"no server {server!r}; choose one of {', '.join(SERVERS)}")
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
    service = RewardService(
        host, TaskDirs(tasks_dir), token, slots, SqliteStore(store), queue, elsewhere
    )
    try:
        carrier: Server
        if server == "uvicorn":
            carrier = AsgiServer((host, port), service)
        else:
            carrier = RewardServer((host, port), service)
        return carrier
    except BaseException:
        service.close()
        raise
