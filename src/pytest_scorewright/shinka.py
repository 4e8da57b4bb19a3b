"""The ShinkaEvolve adapter.

ShinkaEvolve runs ``evaluate.py --program_path P --results_dir D`` and reads
``D/metrics.json`` (``combined_score``, ``public``, ``private``, ``text_feedback``) and
``D/correct.json`` (``correct``, ``error``). An evaluate.py is two lines::

    from pytest_scorewright.shinka import shinka_main
    shinka_main(tests="tests", heldout="heldout", reference="reference")

(or ``scorewright shinka --program_path P --results_dir D --tests T ...``). Held-out figures go
to ``private`` and never into ``text_feedback``, which the LLM reads. Shinka's own
``run_shinka_eval`` imports the program into the evaluating process; this evaluate.py
replaces it, and Shinka's JobScheduler runs it as any other.

A run that fails for a reason of ours is scored again (``--retries``, default 1), since
Shinka does not retry an evaluation; if it still fails, ``correct`` is false with an error
that says so, ``private.scorewright_infrastructure`` is true, and the exit status is 3.
"""

from __future__ import annotations

import argparse
import dataclasses
import fcntl
import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_scorewright._text import clean
from pytest_scorewright.errors import InfrastructureError, ScorewrightError
from pytest_scorewright.evaluator import Evaluator
from pytest_scorewright.feedback import HeldoutSecrets
from pytest_scorewright.fitness import Fitness, parse_pairs
from pytest_scorewright.limits import Limits
from pytest_scorewright.openevolve import artifacts
from pytest_scorewright.result import ScoreResult, write_atomic

_PRIVATE = ("heldout_pass_rate", "heldout_divergence")


def shinka_files(
    result: ScoreResult, fitness: Fitness | None = None, heldout: HeldoutSecrets | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``metrics.json`` and ``correct.json`` contents for ShinkaEvolve (``text_feedback`` and
    the error are what its LLM reads: pytest_scorewright/feedback.py builds them)."""
    fitness = fitness or Fitness()
    outcome = fitness.evaluate(result)
    signals = fitness.metrics(result)
    public = {k: v for k, v in signals.items() if k not in _PRIVATE}
    private = {k: v for k, v in signals.items() if k in _PRIVATE}
    private["integrity_flagged"] = result.integrity.flagged
    for key in ("found_score", "confirmed_score"):  # --confirm: both, out of the LLM's sight
        if isinstance(result.extra.get(key), int | float):
            private[f"scorewright_{key}"] = result.extra[key]
    feedback = artifacts(result, outcome, heldout)
    metrics = {
        # Shinka needs a number; a failed fitness is recorded and scores as Shinka's own
        # failed evaluations do (0.0, correct=false).
        "combined_score": outcome.score if outcome.score is not None else 0.0,
        "public": public,
        "private": private,
        "text_feedback": "\n\n".join(f"{k}:\n{v}" for k, v in feedback.items()),
    }
    error = outcome.error or result.error
    if error is not None:
        error = (heldout or HeldoutSecrets()).with_result(result).scrub(clean(error))
    correct = {
        "correct": outcome.score is not None and result.ok and not result.integrity.rejected,
        "error": error,
    }
    return metrics, correct


def write_shinka(
    results_dir: str | os.PathLike[str],
    result: ScoreResult,
    fitness: Fitness | None = None,
    heldout: HeldoutSecrets | None = None,
) -> None:
    metrics, correct = shinka_files(result, fitness, heldout)
    write_atomic(Path(results_dir) / "correct.json", json.dumps(correct, indent=2) + "\n")
    write_atomic(Path(results_dir) / "metrics.json", json.dumps(metrics, indent=2) + "\n")
    result.write(Path(results_dir) / "scorewright.json")


#: shinka_main's keywords that fill its command line's options; any other keyword is an
#: Evaluator option passed on as it is (``plugins``, ``ini``, ``isolation``...).
_COMMAND_LINE = frozenset(
    {
        "tests",
        "heldout",
        "reference",
        "module",
        "timeout",
        "fitness",
        "fitness_config",
        "objectives",
        "warn_only",
        "fail_closed",
        "retries",
        "test_timeout",
        "memory_mb",
        "confirm",
        "confirm_state",
    }
)


def shinka_main(argv: Sequence[str] | None = None, **defaults: Any) -> int:
    """Entry point for a Shinka evaluate.py; ``defaults`` fill the scorewright options
    (``test_timeout`` and ``memory_mb`` are Limits'; any other keyword is an Evaluator option,
    passed on as it is). Returns the exit status (0 when the files were written from a score)."""
    parser = argparse.ArgumentParser(prog="evaluate.py")
    add_shinka_arguments(parser, defaults)
    parser.set_defaults(
        evaluator_options={k: v for k, v in defaults.items() if k not in _COMMAND_LINE}
    )
    args = parser.parse_args(argv)
    return run_shinka(args)


def _add_task_arguments(parser: argparse.ArgumentParser, defaults: Mapping[str, Any]) -> None:
    """The candidate, where its results go, the task and its limits."""
    add = parser.add_argument
    add("--program_path", required=True, help="The candidate program Shinka wrote")
    add("--results_dir", required=True, help="Where metrics.json and correct.json go")
    add(
        "--tests",
        default=defaults.get("tests"),
        required="tests" not in defaults,
        help="Trusted visible tests (default: %(default)s)",
    )
    add("--heldout", default=defaults.get("heldout"), help="Trusted held-out tests")
    add("--reference", default=defaults.get("reference"), help="Trusted reference solution")
    add(
        "--module",
        default=defaults.get("module", "solution"),
        help="Module name the tests import (default %(default)s)",
    )
    add(
        "--timeout",
        type=float,
        default=defaults.get("timeout", 60.0),
        help="Budget for the whole candidate, in seconds (default %(default)s)",
    )
    add(
        "--test-timeout",
        type=float,
        default=defaults.get("test_timeout"),
        help="Wall-time limit of every test (default: each test its own, from the reference)",
    )
    add(
        "--memory-mb",
        type=int,
        default=defaults.get("memory_mb"),
        help="Address space of each sandboxed process, in MiB (default 2048)",
    )
    add(
        "--fitness",
        default=defaults.get("fitness", "weighted"),
        help="weighted, pass_rate, module:Class, or an entry point (default %(default)s)",
    )


def add_shinka_arguments(
    parser: argparse.ArgumentParser, defaults: Mapping[str, Any] | None = None
) -> None:
    defaults = defaults or {}
    _add_task_arguments(parser, defaults)
    parser.add_argument(
        "--fitness-config",
        action="append",
        metavar="KEY=VALUE",
        default=[f"{k}={v}" for k, v in dict(defaults.get("fitness_config") or {}).items()],
        help="A fitness setting (repeatable), e.g. objective=radii with --fitness objective",
    )
    from pytest_scorewright.command_options import add_judge_option, add_objective_options

    add_objective_options(parser)
    add_judge_option(parser)
    # shinka_main(objectives={...}) keeps its objectives apart from the command line's.
    parser.set_defaults(objectives=dict(defaults.get("objectives") or {}))
    policy = parser.add_mutually_exclusive_group()
    policy.add_argument(
        "--warn-only",
        action="store_true",
        default=defaults.get("warn_only", False),
        help="Record integrity evidence without acting on it",
    )
    policy.add_argument(
        "--fail-closed",
        action="store_true",
        default=defaults.get("fail_closed", False),
        help="Also reject on hints, the weakest evidence",
    )
    parser.add_argument(
        "--retries",
        type=int,
        default=defaults.get("retries", 1),
        help="Score again this many times when a run fails for a reason of ours (default 1)",
    )
    parser.add_argument(
        "--confirm",
        type=int,
        default=defaults.get("confirm", 0),
        metavar="K",
        help="A program whose score would be the best so far is measured K more times and "
        "credited at the worse end of each 95%% interval (default 0: never)",
    )
    parser.add_argument(
        "--confirm-state",
        default=defaults.get("confirm_state"),
        metavar="FILE",
        help="Where the best confirmed score is kept between evaluations (default: "
        "scorewright_best.json two levels above --results_dir, Shinka's run directory)",
    )


#: Exit status when the program could not be scored for a reason of ours or the machine's.
EXIT_NOT_SCORED = 3


def run_shinka(args: argparse.Namespace) -> int:
    """Score and write Shinka's files; bad input still leaves both files, with the reason.

    Shinka has no retry of its own for an evaluation: a run that fails for a reason of ours
    (``infrastructure``, or the Evaluator could not be built for one) is scored again, up to
    ``--retries`` times, and if it still fails ``correct.json`` says so (``correct`` false, the
    error naming it ours), so Shinka never takes it for the program's score; exit status 3."""
    try:
        result, error = _score(args)
        if result is None or result.infrastructure:
            _write_unscored(args.results_dir, result, error)
            return EXIT_NOT_SCORED
        secrets = HeldoutSecrets.of(Path(args.heldout) if args.heldout else None)
        write_shinka(args.results_dir, result, _fitness(args), secrets)
    except ScorewrightError as exc:
        out = Path(args.results_dir)
        write_atomic(out / "correct.json", json.dumps({"correct": False, "error": str(exc)}) + "\n")
        metrics = {"combined_score": 0.0, "public": {}, "private": {}, "text_feedback": str(exc)}
        write_atomic(out / "metrics.json", json.dumps(metrics) + "\n")
        print(f"scorewright: error: {exc}", file=sys.stderr)
        return 2
    return 0


def _fitness(args: argparse.Namespace) -> Fitness:
    return Fitness(args.fitness, parse_pairs(list(args.fitness_config or []), "--fitness-config"))


def _objectives(args: argparse.Namespace) -> dict[str, Any]:
    from pytest_scorewright.command_options import objectives_from_args

    return {**dict(getattr(args, "objectives", None) or {}), **objectives_from_args(args)}


def _score(args: argparse.Namespace) -> tuple[ScoreResult | None, str]:
    """The program's result, scored again while it fails for a reason of ours; the last such
    result (None if no Evaluator could be built) and its error when retries run out."""
    from pytest_scorewright.command_options import judge_from_args

    result: ScoreResult | None = None
    error = ""
    options = dict(getattr(args, "evaluator_options", None) or {})
    judge = judge_from_args(args)
    if judge is not None:
        options["judge"] = judge  # one judge for every try: its cache and budget carry over
    for attempt in range(1 + max(0, args.retries)):
        if attempt:
            print(f"scorewright: retrying: {error}", file=sys.stderr)
        try:
            # Built again each time: a run of the reference can fail for a reason of ours too.
            with Evaluator(
                args.tests,
                heldout=args.heldout,
                reference=args.reference,
                module=args.module,
                limits=Limits(
                    timeout_s=args.timeout,
                    test_timeout_s=getattr(args, "test_timeout", None),
                    memory_mb=getattr(args, "memory_mb", None) or Limits().memory_mb,
                ),
                warn_only=args.warn_only,
                fail_closed=args.fail_closed,
                objectives=_objectives(args),
                **options,
            ) as evaluator:
                result = _confirmed(evaluator, args, evaluator.score(args.program_path))
        except InfrastructureError as exc:
            result, error = None, str(exc)
            continue
        if not result.infrastructure:
            break
        error = result.error or "unknown"
    return result, error


def _confirmed(evaluator: Evaluator, args: argparse.Namespace, found: ScoreResult) -> ScoreResult:
    """With ``--confirm K``: a program whose score beats the best confirmed so far (kept in
    a file, since Shinka runs every evaluation in a process of its own, several at once) is
    measured K more times and credited at the worse end of each interval
    (``Evaluator.confirm``); ``extra`` records both scores."""
    if args.confirm < 0:
        raise ScorewrightError(f"--confirm must be 0 or more, not {args.confirm}")
    fitness = _fitness(args)
    score = fitness.evaluate(found).score
    if not args.confirm or found.infrastructure or score is None:
        return found
    state = Path(args.confirm_state or Path(args.results_dir).resolve().parent.parent / BEST)
    best = _best(state)
    if best is not None and score <= best:
        return found
    confirmed = evaluator.confirm(args.program_path, args.confirm)
    credited = fitness.evaluate(confirmed).score
    if credited is not None and not confirmed.infrastructure:
        _best(state, credited)
    extra = {"found_score": score, "confirmed_score": credited}
    return dataclasses.replace(confirmed, extra={**confirmed.extra, **extra})


#: The file that keeps the best confirmed score of a Shinka run.
BEST = "scorewright_best.json"


def _best(state: Path, candidate: float | None = None) -> float | None:
    """The best confirmed score in ``state``; with ``candidate``, raised to it first (under
    a lock: evaluations run at once)."""
    state.parent.mkdir(parents=True, exist_ok=True)
    with open(state.with_suffix(".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            kept = json.loads(state.read_text(encoding="utf-8")).get("best_confirmed")
        except (OSError, ValueError, AttributeError):
            kept = None
        best = float(kept) if isinstance(kept, int | float) else None
        if candidate is not None and (best is None or candidate > best):
            best = candidate
            write_atomic(state, json.dumps({"best_confirmed": best}) + "\n")
        return best


def _write_unscored(
    results_dir: str | os.PathLike[str], result: ScoreResult | None, error: str
) -> None:
    error = f"not scored, for a reason of scorewright's or the machine's: {error}"
    out = Path(results_dir)
    write_atomic(out / "correct.json", json.dumps({"correct": False, "error": error}) + "\n")
    metrics = {
        # Shinka reads a missing combined_score as 0.0 too; correct=false keeps it out of the
        # archive's scores, and the error and the flag below say it was not the program's.
        "combined_score": 0.0,
        "public": {},
        "private": {"scorewright_infrastructure": True},
        "text_feedback": "This program could not be evaluated (an error of the evaluator, "
        "not of the program); it has no score.",
    }
    write_atomic(out / "metrics.json", json.dumps(metrics, indent=2) + "\n")
    if result is not None:
        result.write(out / "scorewright.json")
    print(f"scorewright: error: {error}", file=sys.stderr)
