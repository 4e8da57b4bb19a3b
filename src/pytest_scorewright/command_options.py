"""The command-line options the scoring commands share (evaluator, fitness, objectives, the
judge), and the Evaluator and Fitness they build: below both ``cli/`` and the Shinka adapter
(``scorewright shinka`` and ``shinka_main``), which use them."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_scorewright.errors import ConfigError
from pytest_scorewright.fitness import Fitness, config_from_pyproject, parse_pairs

if TYPE_CHECKING:
    from pytest_scorewright.evaluator import Evaluator
    from pytest_scorewright.judge import Judge


def objectives_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """``--objective`` and ``--objective-min`` as ``Evaluator(objectives=...)``."""
    from pytest_scorewright.scoring.objectives import parse_option

    found: dict[str, Any] = {}
    for option, minimize in (("--objective", False), ("--objective-min", True)):
        for text in getattr(args, option.lstrip("-").replace("-", "_"), None) or ():
            name, objective = parse_option(text, minimize=minimize, option=option)
            if name in found:
                raise ConfigError(f"{option} {text!r}: objective {name!r} is given twice")
            found[name] = objective
    return found


def judge_from_args(args: argparse.Namespace) -> Judge | None:
    """``--judge KEY=VALUE`` (repeatable) as a Judge, or None without one."""
    pairs = getattr(args, "judge", None)
    if not pairs:
        return None
    from pytest_scorewright.judge import Judge, JudgeSettings

    settings = JudgeSettings.of(parse_pairs(pairs, "--judge"), where="--judge")
    return Judge(settings, prices=prices_from_args(args))


def evaluator_from_args(args: argparse.Namespace) -> Evaluator:
    from pytest_scorewright.evaluator import Evaluator
    from pytest_scorewright.limits import Limits

    judge = judge_from_args(args)  # a bad --judge is said before any work
    return Evaluator(
        args.tests,
        heldout=args.heldout,
        reference=args.reference,
        module=args.module or "solution",
        limits=Limits(
            timeout_s=args.timeout,
            memory_mb=args.memory_mb,
            cpu_s=args.cpu_seconds,
            test_timeout_s=args.test_timeout,
            processes=args.processes,
            one_cpu=not args.spread_cpus,
        ),
        network=args.allow_network,
        fail_closed=args.fail_closed,
        warn_only=args.warn_only,
        repeats=args.repeats,
        require_isolation=args.require_isolation,
        isolation=args.isolation,
        sandbox=args.sandbox,
        plugins=["pytest_timeout", *(args.plugin or [])],
        ini=ini_options(args.ini or []),
        reference_baseline=args.reference_baseline,
        coverage=args.coverage,
        objectives=objectives_from_args(args),
        judge=judge,
    ).prepare()  # a setup mistake is said now, before any candidate


def ini_options(pairs: Sequence[str]) -> dict[str, str]:
    """``--ini KEY=VALUE`` options; a key given again adds a line (a linelist option such as
    ``filterwarnings``)."""
    options: dict[str, str] = {}
    for pair in pairs:
        for key, value in parse_pairs([pair], "--ini").items():
            options[key] = f"{options[key]}\n{value}" if key in options else str(value)
    return options


def fitness_from_args(args: argparse.Namespace) -> tuple[Fitness, dict[str, str]]:
    """pyproject.toml's [tool.scorewright.fitness], then the command line over it."""
    name, config = config_from_pyproject(Path.cwd() / "pyproject.toml")
    if args.fitness:
        name, config = args.fitness, {}
    config.update(parse_pairs(args.fitness_config or [], "--fitness-config"))
    meta = {k: str(v) for k, v in parse_pairs(args.meta or [], "--meta").items()}
    return Fitness(name, config, prices=prices_from_args(args)), meta


def prices_from_args(args: argparse.Namespace) -> dict[str, Any] | None:
    """``--prices FILE``: the price table of the fitness's and the judge's costs."""
    if not getattr(args, "prices", None):
        return None
    try:
        prices = json.loads(Path(args.prices).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(
            f"--prices {args.prices}: cannot read a JSON price table ({exc})"
        ) from None
    if not isinstance(prices, dict):
        raise ConfigError(f"--prices {args.prices}: expected an object of model -> prices")
    return prices


def add_evaluator_options(p: argparse.ArgumentParser, *, tests_required: bool = True) -> None:
    p.add_argument("--tests", required=tests_required, metavar="DIR", help="Trusted visible tests")
    p.add_argument("--heldout", metavar="DIR", help="Trusted held-out tests")
    p.add_argument("--reference", metavar="PATH", help="Trusted reference solution")
    p.add_argument(
        "--module",
        action="append",
        metavar="NAME",
        help="Module name the tests import (default solution); repeat it for a project with "
        "several top-level packages",
    )
    p.add_argument(
        "--timeout",
        type=positive_float,
        default=45.0,
        metavar="SECONDS",
        help="Budget for the whole candidate, visible and held-out runs (default 45)",
    )
    p.add_argument(
        "--test-timeout",
        type=non_negative_float,
        default=None,
        metavar="SECONDS",
        help="Wall-time limit of every test (pytest-timeout); 0 for none (default: each test "
        "its own: ten times its wall time with the reference, at least 1 s, and five times "
        "its CPU time, at least 0.5 s; without a reference a quarter of --timeout, at most 10)",
    )
    p.add_argument(
        "--reference-baseline",
        action="store_true",
        help="Tests the reference fails are not applicable (instead of refusing the suite)",
    )
    p.add_argument(
        "--coverage",
        action="store_true",
        help="Measure the candidate's line coverage (line_coverage: its files' statements "
        "that ran)",
    )
    p.add_argument(
        "--plugin",
        action="append",
        metavar="MODULE",
        help="A pytest plugin every run loads, e.g. anyio.pytest_plugin (repeatable)",
    )
    p.add_argument(
        "--ini",
        action="append",
        metavar="KEY=VALUE",
        help="A pytest ini option of the suite, e.g. asyncio_mode=auto (repeatable; a key "
        "given again adds a line)",
    )
    p.add_argument(
        "--memory-mb",
        type=whole_number(1),
        default=2048,
        metavar="MB",
        help="Address space of each sandboxed process, in MiB (RLIMIT_AS; default 2048)",
    )
    p.add_argument(
        "--processes",
        type=whole_number(1),
        default=64,
        metavar="N",
        help="Processes and threads of a run (RLIMIT_NPROC; default 64)",
    )
    p.add_argument(
        "--cpu-seconds",
        type=whole_number(1),
        default=None,
        metavar="S",
        help="CPU seconds of each sandboxed process (RLIMIT_CPU; default: --timeout rounded up)",
    )
    p.add_argument("--allow-network", action="store_true", help="Do not isolate the network")
    add_judge_option(p)
    _add_isolation_options(p)
    add_objective_options(p)


def _add_isolation_options(p: argparse.ArgumentParser) -> None:
    """The integrity policy, the isolation, the guarantees required, and repeats."""
    policy = p.add_mutually_exclusive_group()
    policy.add_argument(
        "--warn-only",
        action="store_true",
        help="Record integrity evidence without acting on it (by default tamper evidence "
        "withdraws every test's credit and rejects, gaming evidence rejects)",
    )
    policy.add_argument(
        "--fail-closed", action="store_true", help="Also reject on hints, the weakest evidence"
    )
    p.add_argument(
        "--isolation",
        choices=("auto", "process", "in-process"),
        default="auto",
        help="process: the candidate in a process of its own, reached through proxies; "
        "in-process: imported by the tests; auto (default): process when the reference passes "
        "every test that way (docs/isolation.md)",
    )
    p.add_argument(
        "--spread-cpus",
        action="store_true",
        help="With the candidate apart, let a run's processes use every CPU (default: one "
        "CPU per run while one is free: each call's round trip is then faster)",
    )
    p.add_argument(
        "--sandbox",
        choices=("namespaces", "gvisor"),
        default="namespaces",
        help="namespaces (default): Linux namespaces, Landlock and rlimits around each run; "
        "gvisor: all runs inside a gVisor sandbox too (root and runsc; docs/sandbox.md)",
    )
    p.add_argument(
        "--require-isolation",
        nargs="?",
        const=True,
        default=False,
        metavar="NAMES",
        help="Refuse to score where a sandbox guarantee cannot be met: all of them, or the "
        "comma-separated NAMES (docs/sandbox.md)",
    )
    p.add_argument(
        "--repeats",
        type=whole_number(0),
        default=0,
        metavar="N",
        help="Run the visible tests N more times, in fresh work dirs, for timing checks",
    )


def add_judge_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--judge",
        action="append",
        metavar="KEY=VALUE",
        help="An LLM judge of the programs that pass, e.g. --judge model=gpt-4o-mini --judge "
        "base_url=http://localhost:8000/v1 (repeatable; key from SCOREWRIGHT_JUDGE_API_KEY; "
        "docs/judge.md)",
    )


def add_objective_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--objective",
        action="append",
        metavar="NAME=PATH:FUNCTION",
        help="Score the values tests submit as NAME with FUNCTION of the Python file PATH, "
        "in the parent (higher is better; signal objective_NAME; repeatable)",
    )
    p.add_argument(
        "--objective-min",
        action="append",
        metavar="NAME=PATH:FUNCTION",
        help="As --objective, where lower is better",
    )


def add_fitness_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--fitness", metavar="NAME", help="weighted, pass_rate, module:Class, or an entry point"
    )
    p.add_argument(
        "--fitness-config",
        action="append",
        metavar="KEY=VALUE",
        help="A fitness setting (repeatable)",
    )
    p.add_argument(
        "--meta",
        action="append",
        metavar="KEY=VALUE",
        help="Candidate metadata, e.g. tokens_input=1200",
    )
    p.add_argument(
        "--prices",
        metavar="FILE",
        help="JSON price table: {model: {input, output}} USD per million tokens",
    )


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} must be a positive number")
    return value


def non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} must be 0 or a positive number")
    return value


def whole_number(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{text!r} must be at least {minimum}")
        return value

    return parse


def jobs_option(text: str) -> int | str:
    """``-j``: a whole number of at least 1, or ``auto``."""
    return "auto" if text == "auto" else whole_number(1)(text)
