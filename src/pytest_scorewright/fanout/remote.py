"""What runs on an executor's worker: an Evaluator rebuilt from its recipe, kept warm."""

from __future__ import annotations

import json
import os
import threading
from typing import TYPE_CHECKING, Any

from pytest_scorewright.limits import Limits

if TYPE_CHECKING:
    from pytest_scorewright.evaluator import Evaluator

_worker_evaluators: dict[str, Evaluator] = {}
_worker_lock = threading.Lock()


def score_on_worker(recipe: dict[str, Any], candidate: str | os.PathLike[str]) -> str:
    """Run on an executor's worker: score with this process's Evaluator for ``recipe``
    (built on first use, then kept warm), and return the result as JSON."""
    from pytest_scorewright.evaluator import Evaluator

    key = json.dumps(recipe, sort_keys=True)
    with _worker_lock:
        evaluator = _worker_evaluators.get(key)
        if evaluator is None:
            arguments = dict(recipe)
            arguments["limits"] = Limits(**arguments["limits"])
            evaluator = _worker_evaluators[key] = Evaluator(**arguments)
    return evaluator.score(candidate).to_json()
