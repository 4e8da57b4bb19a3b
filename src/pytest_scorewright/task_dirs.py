"""Tasks laid out as directories, and a candidate's reward read from its result: what the
RL-facing faces share (``verl.compute_score``, ``scorewright serve``).

A tasks directory holds one subdirectory per task: ``tests/`` (the visible tests), and
optionally ``heldout/``, a reference (``reference/`` or ``reference.py``) and
``scorewright.json`` (``{"module": "solution", "timeout_s": 30}``). A task is named by its
subdirectory's name, never a path. Each process keeps one prepared Evaluator per task.

The reward's answer: ``score`` (the ``weighted`` fitness), ``verdict`` (passed, failed,
time_limit, memory_limit, error, rejected) and pass rates and flags as numbers, never a
held-out test's name, input or message.
"""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any

from pytest_scorewright.errors import ConfigError
from pytest_scorewright.evaluator import Evaluator
from pytest_scorewright.fitness import Fitness
from pytest_scorewright.limits import Limits
from pytest_scorewright.result import ScoreResult

#: A task's name: letters, digits, ``._-``; never a path.
TASK_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
#: What a task's ``scorewright.json`` may set.
_TASK_OPTIONS: dict[str, type | tuple[type, ...]] = {"module": str, "timeout_s": (int, float)}
#: The fitness a reward is: the default, ``weighted``.
FITNESS = Fitness()


class TaskDirs:
    """The tasks under ``root``, each prepared on first use and kept (thread-safe)."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self._evaluators: dict[str, Evaluator] = {}
        self._lock = threading.Lock()

    def names(self) -> list[str]:
        """The tasks there are (subdirectories with a ``tests/``)."""
        return sorted(
            p.name
            for p in self.root.iterdir()
            if TASK_NAME.fullmatch(p.name) and (p / "tests").is_dir()
        )

    def evaluator(self, task: str) -> Evaluator:
        """This process's prepared Evaluator for ``task``; a bad name or a task that is not
        there is a one-line ConfigError."""
        check_name(task)
        with self._lock:
            found = self._evaluators.get(task)
            if found is None:
                found = self._evaluators[task] = self._build(task).prepare()
            return found

    def close(self) -> None:
        with self._lock:
            for evaluator in self._evaluators.values():
                evaluator.close()
            self._evaluators.clear()

    def _build(self, task: str) -> Evaluator:
        where = self.root / task
        if not (where / "tests").is_dir():
            raise ConfigError(f"no task {task!r}: {where / 'tests'} is not a directory")
        options = _options(where / "scorewright.json")
        reference = next(
            (p for p in (where / "reference", where / "reference.py") if p.exists()), None
        )
        heldout = where / "heldout"
        return Evaluator(
            where / "tests",
            heldout=heldout if heldout.is_dir() else None,
            reference=reference,
            module=str(options.get("module", "solution")),
            limits=Limits(timeout_s=float(options.get("timeout_s", 45.0))),
        )


def check_name(task: object) -> str:
    if not isinstance(task, str) or not TASK_NAME.fullmatch(task):
        raise ConfigError(
            f"scorewright task {task!r} is not a task name (letters, digits, '._-'); name a "
            "subdirectory of the tasks directory"
        )
    return task


def reward_answer(result: ScoreResult, score: float) -> dict[str, Any]:
    """The answer for a scored candidate: its score, verdict and numbers."""
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
