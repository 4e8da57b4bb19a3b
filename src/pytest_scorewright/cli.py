"""The ``scorewright`` command.

Exit status: 0 when the command did its job, 2 for a usage error (one line on stderr).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from pytest_scorewright._version import __version__
from pytest_scorewright.errors import ConfigError, OutputPathError, ScorewrightError
from pytest_scorewright.fitness import Fitness, config_from_pyproject, parse_pairs, with_fitness
from pytest_scorewright.result import ScoreResult, check_writable, write_atomic
from pytest_scorewright.results.summary import summary_lines
from pytest_scorewright.schema import schema_text

if TYPE_CHECKING:
    from pytest_scorewright.evaluator import Evaluator


def _cmd_schema(args: argparse.Namespace) -> int:
    sys.stdout.write(schema_text())
    return 0


def _cmd_show(args: argparse.Namespace) -> int:
    for path in args.results:
        result = ScoreResult.read(path)
        print(f"{path}:")
        for line in summary_lines(result, out=None):
            print(f"  {line}")
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    from pytest_scorewright.results.ctrf import ctrf_json

    if args.out:
        check_writable(args.out)
    text = ctrf_json(ScoreResult.read(args.result))
    if args.out:
        write_atomic(args.out, text)
        print(f"scorewright: wrote {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def objectives_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """``--objective`` and ``--objective-min`` as ``Evaluator(objectives=...)``."""
    from pytest_scorewright.results.objectives import parse_option

    found: dict[str, Any] = {}
    for option, minimize in (("--objective", False), ("--objective-min", True)):
        for text in getattr(args, option.lstrip("-").replace("-", "_"), None) or ():
            name, objective = parse_option(text, minimize=minimize, option=option)
            if name in found:
                raise ConfigError(f"{option} {text!r}: objective {name!r} is given twice")
            found[name] = objective
    return found


def _evaluator_from_args(args: argparse.Namespace) -> Evaluator:
    from pytest_scorewright.evaluator import Evaluator
    from pytest_scorewright.limits import Limits

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
        plugins=["pytest_timeout", *(args.plugin or [])],
        ini=_ini_options(args.ini or []),
        reference_baseline=args.reference_baseline,
        objectives=objectives_from_args(args),
    )


def _ini_options(pairs: Sequence[str]) -> dict[str, str]:
    """``--ini KEY=VALUE`` options; a key given again adds a line (a linelist option such as
    ``filterwarnings``)."""
    options: dict[str, str] = {}
    for pair in pairs:
        for key, value in parse_pairs([pair], "--ini").items():
            options[key] = f"{options[key]}\n{value}" if key in options else str(value)
    return options


def _start_warm_parent() -> None:
    # Before the evaluator's modules import: the two take ~0.2 s each and overlap.
    from pytest_scorewright.warm.parent import prestart

    prestart()


def _cmd_score(args: argparse.Namespace) -> int:
    _start_warm_parent()
    if args.out:
        check_writable(args.out)  # before any work: an unwritable path is a usage error
    fitness, meta = _fitness_from_args(args)
    # Closed before the command returns: the warm parent, too, ends with the command.
    with _evaluator_from_args(args) as evaluator:
        result = with_fitness(evaluator.score(args.candidate), fitness, meta)
    if args.out:
        result.write(args.out)
        for line in summary_lines(result, out=args.out):
            print(line, file=sys.stderr)
    else:
        sys.stdout.write(result.to_json())
    return 0


def _cmd_score_many(args: argparse.Namespace) -> int:
    if args.out_dir is None and args.jsonl is None:
        raise ConfigError("score-many needs --out-dir DIR, --jsonl FILE (or -), or both")
    _start_warm_parent()
    from pytest_scorewright.sandbox.workspace import require_candidate

    out_dir = Path(args.out_dir) if args.out_dir is not None else None
    paths = [require_candidate(c, "candidate") for c in args.candidates]
    names = _result_names(paths)
    if out_dir is not None:
        check_writable(out_dir / names[0])
    stream = _open_stream(args.jsonl)
    fitness, meta = _fitness_from_args(args)
    progress = sys.stderr.isatty()
    started = time.monotonic()
    flagged = failed = ours = 0
    try:
        with _evaluator_from_args(args) as evaluator:
            for done, (index, result) in enumerate(evaluator.score_many(paths, args.jobs), 1):
                judged = with_fitness(result, fitness, meta)
                if stream is not None:
                    _stream_line(stream, judged)
                if out_dir is not None:
                    judged.write(out_dir / names[index])
                flagged += result.integrity.flagged
                failed += not result.ok
                ours += result.infrastructure
                if progress:
                    line = f"\r[{done}/{len(paths)}] {names[index]}".ljust(60)
                    print(line, end="", file=sys.stderr)
    finally:
        if stream is not None and stream is not sys.stdout:
            stream.close()
    if progress:
        print(file=sys.stderr)
    elapsed = time.monotonic() - started
    where = [str(w) for w in (out_dir, args.jsonl if args.jsonl != "-" else None) if w]
    print(
        f"scorewright: scored {len(paths)} candidates in {elapsed:.1f}s "
        f"({len(paths) / elapsed:.2f}/s) with -j {args.jobs}; {failed} not ok, {flagged} flagged; "
        + (f"{ours} not scored for reasons of ours (retry them); " if ours else "")
        + (f"results in {' and '.join(where)}" if where else "results on stdout"),
        file=sys.stderr,
    )
    return 0


def _open_stream(target: str | None) -> TextIO | None:
    """The JSON Lines stream of ``--jsonl``: stdout for ``-``, else a file made empty now."""
    if target is None:
        return None
    if target == "-":
        return sys.stdout
    path = check_writable(target)
    try:
        return path.open("w", encoding="utf-8")
    except OSError as exc:
        raise OutputPathError(
            f"cannot write the results to {target!r}: {exc.strerror}; "
            "choose a path in a writable directory"
        ) from None


def _stream_line(stream: TextIO, result: ScoreResult) -> None:
    # One result a line, flushed as it is written: a caller killed mid-batch keeps every
    # line written before (the kernel holds what was flushed; a reader sees whole lines).
    stream.write(json.dumps(result.to_dict(), ensure_ascii=False, allow_nan=False) + "\n")
    stream.flush()


def _result_names(paths: Sequence[Path]) -> list[str]:
    """``<candidate>.json``, numbered where two candidates share a name."""
    names: list[str] = []
    seen: dict[str, int] = {}
    for path in paths:
        stem = path.stem if path.is_file() else path.name
        count = seen[stem] = seen.get(stem, 0) + 1
        names.append(f"{stem}.json" if count == 1 else f"{stem}-{count}.json")
    return names


def _cmd_leaderboard(args: argparse.Namespace) -> int:
    from pytest_scorewright import leaderboard

    if args.html:
        check_writable(args.html)
    fitness, _ = _fitness_from_args(args)
    rows = leaderboard.rank(leaderboard.load(args.results), fitness)
    sys.stdout.write(leaderboard.table(rows))
    if args.html:
        write_atomic(args.html, leaderboard.page(rows, fitness.name, plot=args.plot))
        print(f"scorewright: wrote {args.html}", file=sys.stderr)
    return 0


def _fitness_from_args(args: argparse.Namespace) -> tuple[Fitness, dict[str, str]]:
    """pyproject.toml's [tool.scorewright.fitness], then the command line over it."""
    name, config = config_from_pyproject(Path.cwd() / "pyproject.toml")
    if args.fitness:
        name, config = args.fitness, {}
    config.update(parse_pairs(args.fitness_config or [], "--fitness-config"))
    prices = None
    if args.prices:
        try:
            prices = json.loads(Path(args.prices).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(
                f"--prices {args.prices}: cannot read a JSON price table ({exc})"
            ) from None
        if not isinstance(prices, dict):
            raise ConfigError(f"--prices {args.prices}: expected an object of model -> prices")
    meta = {k: str(v) for k, v in parse_pairs(args.meta or [], "--meta").items()}
    return Fitness(name, config, prices=prices), meta


def _add_evaluator_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tests", required=True, metavar="DIR", help="Trusted visible tests")
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
        type=_positive_float,
        default=45.0,
        metavar="SECONDS",
        help="Budget for the whole candidate, visible and held-out runs (default 45)",
    )
    p.add_argument(
        "--test-timeout",
        type=_non_negative_float,
        default=None,
        metavar="SECONDS",
        help="Limit of one test (pytest-timeout); 0 for none (default: a quarter of "
        "--timeout, at most 10)",
    )
    p.add_argument(
        "--reference-baseline",
        action="store_true",
        help="Tests the reference fails are not applicable (instead of refusing the suite)",
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
    p.add_argument("--memory-mb", type=_whole_number(1), default=2048, metavar="MB")
    p.add_argument(
        "--processes",
        type=_whole_number(1),
        default=64,
        metavar="N",
        help="Processes and threads of a run (RLIMIT_NPROC; default 64)",
    )
    p.add_argument("--cpu-seconds", type=_whole_number(1), default=None, metavar="S")
    p.add_argument("--allow-network", action="store_true", help="Do not isolate the network")
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
        type=_whole_number(0),
        default=0,
        metavar="N",
        help="Run the visible tests N more times, in fresh work dirs, for timing checks",
    )
    add_objective_options(p)


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


def _add_fitness_options(p: argparse.ArgumentParser) -> None:
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


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} must be a positive number")
    return value


def _non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} must be 0 or a positive number")
    return value


def _whole_number(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{text!r} must be at least {minimum}")
        return value

    return parse


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="scorewright",
        description="Score candidate programs with a pytest suite as an honest fitness function.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("schema", help="Print the JSON Schema of the ScoreResult")
    p.set_defaults(func=_cmd_schema)

    p = sub.add_parser(
        "score",
        help="Score a candidate in a sandbox; writes a ScoreResult (exit 0 whenever written)",
    )
    p.add_argument("candidate", metavar="CANDIDATE", help="A .py file or a directory")
    p.add_argument("--out", metavar="FILE", help="Write the result here (default: stdout)")
    _add_evaluator_options(p)
    _add_fitness_options(p)
    p.set_defaults(func=_cmd_score)

    p = sub.add_parser("score-many", help="Score many candidates at once, one result file each")
    p.add_argument("candidates", nargs="+", metavar="CANDIDATE")
    p.add_argument("--out-dir", metavar="DIR", help="One <candidate>.json each")
    p.add_argument(
        "--jsonl",
        metavar="FILE",
        help="Write one ScoreResult a line as each candidate finishes (- for stdout)",
    )
    p.add_argument("-j", "--jobs", type=_whole_number(1), default=2, help="Candidates at once")
    _add_evaluator_options(p)
    _add_fitness_options(p)
    p.set_defaults(func=_cmd_score_many)

    p = sub.add_parser("leaderboard", help="Rank ScoreResult files by a fitness function")
    p.add_argument("results", nargs="+", metavar="RESULT.json")
    p.add_argument("--html", metavar="FILE", help="Also write a self-contained HTML page")
    p.add_argument(
        "--plot",
        metavar="SIGNAL",
        help="Also chart this signal on the HTML page (an objective, speedup...)",
    )
    _add_fitness_options(p)
    p.set_defaults(func=_cmd_leaderboard)

    p = sub.add_parser(
        "shinka", help="Score a program for ShinkaEvolve: writes metrics.json and correct.json"
    )
    from pytest_scorewright.shinka import add_shinka_arguments, run_shinka

    add_shinka_arguments(p)
    p.set_defaults(func=run_shinka)

    p = sub.add_parser("export", help="Write a ScoreResult in another report format")
    p.add_argument("result", metavar="RESULT.json")
    p.add_argument(
        "--ctrf",
        action="store_true",
        required=True,
        help="As a CTRF JSON test report (the one format so far)",
    )
    p.add_argument("--out", metavar="FILE", help="Write the report here (default: stdout)")
    p.set_defaults(func=_cmd_export)

    p = sub.add_parser("show", help="Print the headline numbers of ScoreResult files")
    p.add_argument("results", nargs="+", metavar="RESULT.json")
    p.set_defaults(func=_cmd_show)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.func(args)
    except ScorewrightError as exc:
        print(f"scorewright: error: {exc}", file=sys.stderr)
        return 2
    return code


if __name__ == "__main__":
    sys.exit(main())
