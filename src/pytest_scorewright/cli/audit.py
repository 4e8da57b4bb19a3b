"""``scorewright audit``: the suite's audit, the user's evaluator's, or both (docs/audit.md)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pytest_scorewright.audit import Inputs, audit_evaluator, audit_suite
from pytest_scorewright.audit.render import evaluator_lines, html_page, suite_lines
from pytest_scorewright.command_options import evaluator_from_args, ini_options
from pytest_scorewright.errors import ConfigError
from pytest_scorewright.result import check_writable, write_atomic


def run_audit(args: argparse.Namespace) -> int:
    if not args.tests and not args.evaluator:
        raise ConfigError(
            "audit needs --tests DIR (the suite's audit), --evaluator FILE (your evaluator's), "
            "or both"
        )
    if not args.reference:
        raise ConfigError(
            "audit needs --reference PATH: a correct program, to make the gaming candidates "
            "and the mutants from"
        )
    reference = Path(args.reference)
    if not reference.exists():
        raise ConfigError(f"--reference {reference}: no such file or directory")
    if args.evaluator and not Path(args.evaluator).is_file():
        raise ConfigError(f"--evaluator {args.evaluator}: no such file; give an evaluator.py")
    if args.inputs_from and not Path(args.inputs_from).is_dir():
        raise ConfigError(f"--inputs-from {args.inputs_from}: no such directory; give a tests dir")
    for path in (args.json, args.html):
        if path:
            check_writable(path)
    modules = tuple(args.module or ["solution"])
    report: dict[str, Any] = {}
    if args.tests:
        with evaluator_from_args(args) as evaluator:
            inputs = Inputs(
                Path(args.tests),
                Path(args.heldout) if args.heldout else None,
                reference,
                modules[0],
                modules,
                ini_options(args.ini or []),
            )
            report["suite"] = audit_suite(
                evaluator,
                inputs,
                strategies=args.strategy,
                workers=args.jobs,
                max_mutants=args.mutants,
                propose_dir=Path(args.propose) if args.propose else None,
            )
        print("\n".join(suite_lines(report["suite"])))
    if args.evaluator:
        report["evaluator"] = audit_evaluator(
            Path(args.evaluator).resolve(),
            reference.resolve(),
            modules[0],
            _inputs_dir(args),
            strategies=args.strategy,
            workers=args.jobs,
        )
        print("\n".join(evaluator_lines(report["evaluator"])))
    if args.json:
        write_atomic(args.json, json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    if args.html:
        write_atomic(args.html, html_page(report.get("suite"), report.get("evaluator")))
    for path in (args.json, args.html):
        if path:
            print(f"scorewright: wrote {path}", file=sys.stderr)
    credited = [
        *report.get("suite", {}).get("scorewright_credited", []),
        *report.get("evaluator", {}).get("credited", []),
    ]
    return 1 if args.fail_on == "credited" and credited else 0


def _inputs_dir(args: argparse.Namespace) -> Path | None:
    """Where the lookup strategies' inputs are read from: ``--inputs-from``, else the suite."""
    chosen = args.inputs_from or args.tests
    return Path(chosen) if chosen else None
