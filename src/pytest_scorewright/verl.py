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

import json
import os
import re
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_scorewright.errors import ConfigError
from pytest_scorewright.evaluator import Evaluator
from pytest_scorewright.fitness import Fitness
from pytest_scorewright.limits import Limits
from pytest_scorewright.result import ScoreResult
from pytest_scorewright.verifiers import extract_code, judged

#: The environment variable naming the tasks' directory.
TASKS_ENV = "SCOREWRIGHT_TASKS_DIR"
#: A task's name: letters, digits, ``._-``; never a path.
_TASK_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
#: What a task's ``scorewright.json`` may set.
_TASK_OPTIONS: dict[str, type | tuple[type, ...]] = {"module": str, "timeout_s": (int, float)}

_evaluators: dict[str, Evaluator] = {}
_lock = threading.Lock()
_fitness = Fitness()


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any = None,
    extra_info: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The reward of one sample: its last fenced code block (else the whole completion)
    scored on its task's tests; see the module's text for the answer's keys."""
    task = _task_name(data_source, extra_info)
    evaluator = _evaluator(task)
    result = evaluator.score_source(extract_code(solution_str))
    _, score = judged(result, _fitness)  # raises for a reason of ours: never a 0.0
    return {"score": score, "verdict": verdict(result), **_numbers(result)}


def verdict(result: ScoreResult) -> str:
    """One word for what the sample did: rejected (gaming evidence), error (its own import or
    crash), memory_limit, time_limit, passed (every applicable test), failed."""
    if result.integrity.rejected:
        return "rejected"
    applicable = [t for t in result.tests if t.applicable]
    messages = " ".join([result.error or "", *(t.message or "" for t in applicable)])
    if "MemoryError" in messages or "memory limit" in messages:
        return "memory_limit"
    if result.error and not applicable:
        return "error"
    if any(t.outcome == "timeout" for t in applicable):
        return "time_limit"
    if result.error:
        return "error"
    return "passed" if applicable and all(t.passed for t in applicable) else "failed"


def _numbers(result: ScoreResult) -> dict[str, float]:
    """Pass rates and flags, as numbers (what a trainer logs beside the reward)."""
    found = {
        name: value
        for name in ("pass_rate", "visible_pass_rate", "heldout_pass_rate", "duration_s")
        if (value := result.signal(name)) is not None
    }
    found["flagged"] = float(result.integrity.flagged)
    found["rejected"] = float(result.integrity.rejected)
    return found


def _task_name(data_source: str, extra_info: Mapping[str, Any] | None) -> str:
    chosen = (extra_info or {}).get("scorewright_task", data_source)
    if not isinstance(chosen, str) or not _TASK_NAME.fullmatch(chosen):
        raise ConfigError(
            f"scorewright task {chosen!r} is not a task name (letters, digits, '._-'); set "
            "extra_info['scorewright_task'] or data_source to a subdirectory's name"
        )
    return chosen


def _evaluator(task: str) -> Evaluator:
    """This process's prepared Evaluator for ``task`` (made on first use)."""
    with _lock:
        found = _evaluators.get(task)
        if found is None:
            found = _evaluators[task] = _build(task).prepare()
        return found


def _build(task: str) -> Evaluator:
    root = os.environ.get(TASKS_ENV)
    if not root:
        raise ConfigError(f"{TASKS_ENV} is not set; set it to the directory of your tasks")
    where = Path(root) / task
    if not (where / "tests").is_dir():
        raise ConfigError(f"no task {task!r}: {where / 'tests'} is not a directory")
    options = _options(where / "scorewright.json")
    reference = next((p for p in (where / "reference", where / "reference.py") if p.exists()), None)
    heldout = where / "heldout"
    return Evaluator(
        where / "tests",
        heldout=heldout if heldout.is_dir() else None,
        reference=reference,
        module=str(options.get("module", "solution")),
        limits=Limits(timeout_s=float(options.get("timeout_s", 45.0))),
    )


def _options(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: not a JSON object ({exc})") from None
    if not isinstance(found, dict):
        raise ConfigError(f"{path}: not a JSON object")
    for key, value in found.items():
        kind = _TASK_OPTIONS.get(key)
        if kind is None or not isinstance(value, kind) or isinstance(value, bool):
            raise ConfigError(f"{path}: {key!r} is not one of {sorted(_TASK_OPTIONS)} as typed")
    return found
