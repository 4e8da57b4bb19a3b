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
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_scorewright.errors import ConfigError
from pytest_scorewright.task_dirs import FITNESS, TaskDirs, check_name, reward_answer
from pytest_scorewright.verifiers import extract_code, judged

#: The environment variable naming the tasks' directory.
TASKS_ENV = "SCOREWRIGHT_TASKS_DIR"
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
    evaluator = _tasks().evaluator(task)
    result = evaluator.score_source(extract_code(solution_str))
    _, score = judged(result, FITNESS)  # raises for a reason of ours: never a 0.0
    return reward_answer(result, score)


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
