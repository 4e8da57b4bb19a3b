"""The ShinkaEvolve adapter.

ShinkaEvolve runs ``evaluate.py --program_path P --results_dir D`` and reads
``D/metrics.json`` (``combined_score``, ``public``, ``private``, ``text_feedback``) and
``D/correct.json`` (``correct``, ``error``). An evaluate.py is two lines::

    from pytest_scorewright.shinka import shinka_main
    shinka_main(tests="tests", heldout="heldout", reference="reference")

(or ``scorewright shinka --program_path P --results_dir D --tests T ...``). Held-out figures go
to ``private`` and never into ``text_feedback``, which the LLM reads.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_scorewright.errors import ScorewrightError
from pytest_scorewright.evaluator import Evaluator
from pytest_scorewright.fitness import Fitness
from pytest_scorewright.limits import Limits
from pytest_scorewright.openevolve import artifacts
from pytest_scorewright.result import ScoreResult, write_atomic

_PRIVATE = ("heldout_pass_rate", "heldout_divergence")


def shinka_files(
    result: ScoreResult, fitness: Fitness | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``metrics.json`` and ``correct.json`` contents for ShinkaEvolve."""
    fitness = fitness or Fitness()
    outcome = fitness.evaluate(result)
    signals = fitness.metrics(result)
    public = {k: v for k, v in signals.items() if k not in _PRIVATE}
    private = {k: v for k, v in signals.items() if k in _PRIVATE}
    private["integrity_flagged"] = result.integrity.flagged
    feedback = artifacts(result, outcome)
    metrics = {
        # Shinka needs a number; a failed fitness is recorded and scores as Shinka's own
        # failed evaluations do (0.0, correct=false).
        "combined_score": outcome.score if outcome.score is not None else 0.0,
        "public": public,
        "private": private,
        "text_feedback": "\n\n".join(f"{k}:\n{v}" for k, v in feedback.items()),
    }
    error = outcome.error or result.error
    correct = {
        "correct": outcome.score is not None and result.ok and not result.integrity.rejected,
        "error": error,
    }
    return metrics, correct


def write_shinka(
    results_dir: str | os.PathLike[str], result: ScoreResult, fitness: Fitness | None = None
) -> None:
    metrics, correct = shinka_files(result, fitness)
    write_atomic(Path(results_dir) / "correct.json", json.dumps(correct, indent=2) + "\n")
    write_atomic(Path(results_dir) / "metrics.json", json.dumps(metrics, indent=2) + "\n")
    result.write(Path(results_dir) / "scorewright.json")


def shinka_main(argv: Sequence[str] | None = None, **defaults: Any) -> int:
    """Entry point for a Shinka evaluate.py; ``defaults`` fill the scorewright options.
    Returns the exit status (0 when the files were written from a score)."""
    parser = argparse.ArgumentParser(prog="evaluate.py")
    add_shinka_arguments(parser, defaults)
    args = parser.parse_args(argv)
    return run_shinka(args)


def add_shinka_arguments(
    parser: argparse.ArgumentParser, defaults: Mapping[str, Any] | None = None
) -> None:
    defaults = defaults or {}
    parser.add_argument("--program_path", required=True)
    parser.add_argument("--results_dir", required=True)
    parser.add_argument("--tests", default=defaults.get("tests"), required="tests" not in defaults)
    parser.add_argument("--heldout", default=defaults.get("heldout"))
    parser.add_argument("--reference", default=defaults.get("reference"))
    parser.add_argument("--module", default=defaults.get("module", "solution"))
    parser.add_argument("--timeout", type=float, default=defaults.get("timeout", 60.0))
    parser.add_argument("--fitness", default=defaults.get("fitness", "weighted"))
    policy = parser.add_mutually_exclusive_group()
    policy.add_argument(
        "--warn-only", action="store_true", default=defaults.get("warn_only", False)
    )
    policy.add_argument(
        "--fail-closed", action="store_true", default=defaults.get("fail_closed", False)
    )


def run_shinka(args: argparse.Namespace) -> int:
    """Score and write Shinka's files; bad input still leaves both files, with the reason."""
    try:
        with Evaluator(
            args.tests,
            heldout=args.heldout,
            reference=args.reference,
            module=args.module,
            limits=Limits(timeout_s=args.timeout),
            warn_only=args.warn_only,
            fail_closed=args.fail_closed,
        ) as evaluator:
            write_shinka(
                args.results_dir, evaluator.score(args.program_path), Fitness(args.fitness)
            )
    except ScorewrightError as exc:
        out = Path(args.results_dir)
        write_atomic(out / "correct.json", json.dumps({"correct": False, "error": str(exc)}) + "\n")
        metrics = {"combined_score": 0.0, "public": {}, "private": {}, "text_feedback": str(exc)}
        write_atomic(out / "metrics.json", json.dumps(metrics) + "\n")
        print(f"scorewright: error: {exc}", file=sys.stderr)
        return 2
    return 0
