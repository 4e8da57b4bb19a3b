"""``scorewright verify --dataset``: the options and the command for many repository tasks
(verify/dataset.py does the work)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from pytest_scorewright._text import bound_message
from pytest_scorewright.errors import ConfigError
from pytest_scorewright.verify.dataset import (
    pending,
    read_dataset,
    read_predictions,
    run_dataset,
    summary,
)
from pytest_scorewright.verify.dataset_envs import environment_summary, run_in_environments
from pytest_scorewright.verify.environment import INSIDE


def add_dataset_options(p: argparse.ArgumentParser) -> None:
    group = p.add_argument_group("many tasks (SWE-bench's instance format)")
    group.add_argument(
        "--dataset",
        metavar="FILE",
        help="Verify every instance of this JSON Lines (or JSON list) file; --out is the "
        "JSON Lines file of verdicts, one line an instance",
    )
    group.add_argument(
        "--predictions",
        metavar="FILE",
        help="The candidates' patches (instance_id, model_patch), or 'gold' for each "
        "instance's own patch (default gold)",
    )
    group.add_argument(
        "--repos", metavar="DIR", help="Holds a git clone of each repository (owner__name)"
    )
    group.add_argument(
        "-j", "--jobs", type=int, default=1, metavar="N", help="Instances at once (default 1)"
    )
    group.add_argument(
        "--validate",
        type=int,
        default=0,
        metavar="K",
        help="Verify each instance's gold and empty patches K times first: invalid instances "
        "and flaky tests are found, and the verdict's error rates estimated (default 0)",
    )
    group.add_argument(
        "--resume", action="store_true", help="Keep the verdicts --out already holds"
    )


def cmd_dataset(args: argparse.Namespace, venvs: Path | None = None) -> int:
    """Verify a dataset here, or (``venvs``: the venv cache) each instance in the venv of its
    base commit's requirements."""
    if not args.out:
        raise ConfigError("--dataset needs --out FILE: where the verdicts go, a line each")
    if args.validate < 0:
        raise ConfigError(f"--validate {args.validate} must be 0 or more")
    if args.jobs < 1:
        raise ConfigError(f"--jobs {args.jobs} must be at least 1")
    instances = read_dataset(Path(args.dataset))
    predictions = read_predictions(args.predictions or "gold", instances)
    out = Path(args.out)
    todo = pending(instances, out, resume=args.resume)
    if INSIDE not in os.environ:  # in an environment's venv the caller has said it already
        print(f"scorewright: {len(instances)} instance(s), {len(todo)} to verify", file=sys.stderr)
    repos = Path(args.repos) if args.repos else None
    if venvs is not None:
        run_in_environments(
            todo,
            predictions,
            out,
            repos=repos,
            extras=args.extra,
            cache=venvs,
            child_args=[
                "-j",
                str(args.jobs),
                "--validate",
                str(args.validate),
                "--timeout",
                str(args.timeout),
            ],
            on_line=lambda entry: _say(entry, "-"),
        )
    else:
        counter = iter(range(1, len(todo) + 1))
        run_dataset(
            todo,
            predictions,
            out,
            repos=repos,
            jobs=args.jobs,
            validate=args.validate,
            timeout_s=args.timeout,
            on_line=lambda line: _say(line.to_dict(), f"{next(counter)}/{len(todo)}"),
        )
    entries = [json.loads(text) for text in out.read_text(encoding="utf-8").splitlines() if text]
    found = summary(entries)
    if venvs is not None:
        found |= environment_summary(entries)
    print("scorewright: summary " + json.dumps(found))
    return 0


def _say(entry: dict[str, Any], where: str) -> None:
    # A verdict's reason can carry the candidate's text (its run's error): cleaned for the
    # terminal, one line.
    why = entry.get("why")
    said = f": {bound_message(str(why), 160)}" if why else ""
    name = bound_message(str(entry.get("instance_id")), 80)
    print(
        f"scorewright: [{where}] {name}: {entry.get('status')}{said} "
        f"({float(entry.get('seconds') or 0):.1f} s)".replace("\n", " "),
        file=sys.stderr,
    )
