"""``scorewright verify --dataset``: the options and the command for many repository tasks
(verify/dataset.py does the work)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pytest_scorewright.errors import ConfigError
from pytest_scorewright.verify.dataset import (
    Line,
    done_ids,
    read_dataset,
    read_predictions,
    run_dataset,
    summary,
)


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


def cmd_dataset(args: argparse.Namespace) -> int:
    if not args.out:
        raise ConfigError("--dataset needs --out FILE: where the verdicts go, a line each")
    if args.validate < 0:
        raise ConfigError(f"--validate {args.validate} must be 0 or more")
    instances = read_dataset(Path(args.dataset))
    predictions = read_predictions(args.predictions or "gold", instances)
    out = Path(args.out)
    skip = done_ids(out) if args.resume else set()
    todo = sum(i.instance_id not in skip for i in instances)
    print(f"scorewright: {len(instances)} instance(s), {todo} to verify", file=sys.stderr)
    counter = iter(range(1, todo + 1))

    def said(line: Line) -> None:
        why = f": {line.why[:160]}" if line.why else ""
        print(
            f"scorewright: [{next(counter)}/{todo}] {line.instance_id[:80]}: {line.status}{why} "
            f"({line.seconds:.1f} s)",
            file=sys.stderr,
        )

    run_dataset(
        instances,
        predictions,
        out,
        repos=Path(args.repos) if args.repos else None,
        jobs=args.jobs,
        validate=args.validate,
        timeout_s=args.timeout,
        resume=args.resume,
        on_line=said,
    )
    entries = [json.loads(text) for text in out.read_text(encoding="utf-8").splitlines() if text]
    print("scorewright: summary " + json.dumps(summary(entries)))
    return 0
