"""verl's reward function: a sample's code scored by a task's trusted tests, in a sandbox.

verl calls ``compute_score(data_source=..., solution_str=..., ground_truth=...,
extra_info=...)`` for each sample in its reward worker (verl's reward managers; the result may
be a float or a dict whose every key it records beside the reward). Point its configuration
here::

    custom_reward_function:
      path: /path/to/site-packages/pytest_scorewright/verl.py
      name: compute_score

and say where the tasks are: ``SCOREWRIGHT_TASKS_DIR`` names a directory with one
subdirectory per task, each holding ``tests/`` (the visible tests), and optionally
``heldout/``, a reference (``reference/`` or ``reference.py``) and ``scorewright.json``
(``{"module": "solution", "timeout_s": 30}``). A sample's task is
``extra_info["scorewright_task"]`` if it has one, else its ``data_source``; a name, never a
path. Each worker process keeps one prepared Evaluator per task (the reference is measured
once), and every sample runs in a fresh sandbox: a sample cannot poison the next one
(verl #7603's failure mode).

The answer is a dict: ``score`` (the fitness, the ``weighted`` one by default:
:class:`~pytest_scorewright.Fitness`), ``verdict`` (``passed``, ``failed``, ``time_limit``,
``memory_limit``, ``error``: the sample's own import or crash, ``rejected``: gaming), and
pass rates and flags as numbers. Never a held-out test's name, input or message: trainers log
these and paste them into prompts. A sample that cannot be scored for a reason of ours (the
sandbox could not start, the warm parent died) raises :class:`InfrastructureError` instead of
reading 0.0: a made-up reward is noise the policy trains on.

Or score through a reward service (``scorewright serve``, reward_service.py) instead of in
the worker: set ``SCOREWRIGHT_SERVE_URL`` (``http://host:8000``) and, where the service has
one, ``SCOREWRIGHT_TOKEN``; a ``429`` is retried after its ``Retry-After`` (for up to
:data:`SERVICE_WAIT_S`), and a reward the service could not measure raises as above.

For trainers that await their rewards: :func:`async_compute_score` (the same, off the event
loop's thread), and slime/miles' ``--custom-rm-path pytest_scorewright.verl.slime_reward``
(``async def (args, sample)``: the sample's ``response``, its task in
``metadata["scorewright_task"]`` or its ``label``; the reward as a float).
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_scorewright.errors import ConfigError, InfrastructureError
from pytest_scorewright.task_dirs import FITNESS, TaskDirs, check_name, reward_answer
from pytest_scorewright.verifiers import extract_code, judged

#: The environment variable naming the tasks' directory.
TASKS_ENV = "SCOREWRIGHT_TASKS_DIR"
#: ... and the reward service's address, to score there instead.
SERVICE_ENV = "SCOREWRIGHT_SERVE_URL"
#: The service's bearer token, where it has one (reward_service.py TOKEN_ENV).
_TOKEN_ENV = "SCOREWRIGHT_TOKEN"  # noqa: S105 - a variable's name, not a secret
#: How long a sample waits for the service's slots (its 429s) before that is an error.
SERVICE_WAIT_S = 600.0
_dirs: TaskDirs | None = None
_lock = threading.Lock()


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any = None,
    extra_info: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The reward of one sample: its last fenced code block (else the whole completion)
    scored on its task's tests; see the module's text for the answer's keys."""
    task = check_name((extra_info or {}).get("scorewright_task", data_source))
    service = os.environ.get(SERVICE_ENV)
    if service:
        return _from_service(service.rstrip("/"), task, solution_str)
    evaluator = _tasks().evaluator(task)
    result = evaluator.score_source(extract_code(solution_str))
    _, score = judged(result, FITNESS)  # raises for a reason of ours: never a 0.0
    return reward_answer(result, score)


async def async_compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any = None,
    extra_info: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """:func:`compute_score` for a trainer's event loop: scored in a thread, awaited."""
    return await asyncio.to_thread(
        compute_score, data_source, solution_str, ground_truth, extra_info
    )


async def slime_reward(args: Any, sample: Any) -> float:
    """slime's and miles' custom reward (``--custom-rm-path``): one sample's reward."""
    metadata = getattr(sample, "metadata", None) or {}
    task = metadata.get("scorewright_task") or getattr(sample, "label", None)
    if not isinstance(task, str):
        raise ConfigError("the sample names no task: set metadata['scorewright_task'] or label")
    answer = await async_compute_score(task, str(getattr(sample, "response", "")))
    return float(answer["score"])


def _from_service(url: str, task: str, source: str) -> dict[str, Any]:
    """The service's answer for one sample, as :func:`compute_score` gives it."""
    headers = {"Content-Type": "application/json"}
    token = os.environ.get(_TOKEN_ENV)
    if token:
        headers["Authorization"] = f"Bearer {token}"
    body = json.dumps({"task": task, "source": source}).encode()
    deadline = time.monotonic() + SERVICE_WAIT_S
    while True:
        request = urllib.request.Request(f"{url}/score", body, headers, method="POST")  # noqa: S310
        try:
            with urllib.request.urlopen(request, timeout=SERVICE_WAIT_S) as reply:  # noqa: S310
                answer: dict[str, Any] = json.loads(reply.read())
                break
        except urllib.error.HTTPError as exc:
            said = exc.read()[:300].decode("utf-8", "replace")
            if exc.code == 429 and time.monotonic() < deadline:
                time.sleep(float(exc.headers.get("Retry-After") or 1))
                continue
            if exc.code in (400, 404):
                raise ConfigError(f"the reward service refused the sample: {said}") from None
            raise InfrastructureError(f"the reward service answered {exc.code}: {said}") from None
        except (OSError, ValueError) as exc:
            raise InfrastructureError(f"the reward service at {url} failed: {exc}") from None
    if answer.get("reward") is None:
        raise InfrastructureError(f"not scored: {answer.get('reason')}")
    return {"score": answer.pop("reward"), **answer}


def _tasks() -> TaskDirs:
    """This process's tasks, from ``SCOREWRIGHT_TASKS_DIR`` (read on first use)."""
    global _dirs
    with _lock:
        root = os.environ.get(TASKS_ENV)
        if not root:
            raise ConfigError(f"{TASKS_ENV} is not set; set it to the directory of your tasks")
        if _dirs is None or _dirs.root != Path(root):
            _dirs = TaskDirs(root)
        return _dirs
