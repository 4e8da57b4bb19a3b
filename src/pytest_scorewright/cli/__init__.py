"""The ``scorewright`` command.

Exit status: 0 when the command did its job, 2 for a usage error (one line on stderr).
"""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Callable, Sequence

from pytest_scorewright._version import __version__
from pytest_scorewright.cli import commands
from pytest_scorewright.command_options import (
    add_evaluator_options,
    add_fitness_options,
    jobs_option,
    whole_number,
)
from pytest_scorewright.errors import ScorewrightError

__all__ = ["build_parser", "main"]


def _scores_candidates(p: argparse.ArgumentParser, func: Callable[..., int]) -> None:
    """The options every command that builds an Evaluator shares, and its handler."""
    add_evaluator_options(p)
    add_fitness_options(p)
    p.set_defaults(func=func)


def _add_result_readers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``leaderboard`` and ``report``: the commands that read results already written."""
    p = sub.add_parser("leaderboard", help="Rank ScoreResult files by a fitness function")
    p.add_argument("results", nargs="+", metavar="RESULT.json")
    p.add_argument("--html", metavar="FILE", help="Also write a self-contained HTML page")
    p.add_argument(
        "--top", type=whole_number(1), metavar="N", help="Show only the best N candidates"
    )
    p.add_argument(
        "--plot",
        metavar="SIGNAL",
        help="Also chart this signal on the HTML page (an objective, speedup...)",
    )
    add_fitness_options(p)
    p.set_defaults(func=commands.cmd_leaderboard)

    p = sub.add_parser(
        "report",
        help="A run's results (JSON Lines, a directory, an OpenEvolve or Shinka output "
        "directory) as one static HTML report, its figures as JSON, one CSV row a candidate",
    )
    p.add_argument("runs", nargs="+", metavar="RUN")
    p.add_argument("--html", metavar="FILE", help="Write the self-contained HTML report here")
    p.add_argument("--json", metavar="FILE", help="Write the figures behind it here")
    p.add_argument("--csv", metavar="FILE", help="Write one row per candidate here")
    p.add_argument(
        "--top",
        type=whole_number(1),
        default=50,
        metavar="N",
        help="Rows of the top table (default 50)",
    )
    add_fitness_options(p)
    p.set_defaults(func=commands.cmd_report)


def _add_audit(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "audit",
        help="How gameable a suite (and your own evaluator) is: known gaming strategies, "
        "mutants of the reference, proposed held-out tests (docs/audit.md)",
    )
    p.add_argument("--evaluator", metavar="FILE", help="Also red-team this evaluator of yours")
    p.add_argument(
        "--inputs-from",
        metavar="DIR",
        help="With --evaluator and no --tests: read the lookup strategies' inputs from the "
        "tests in DIR (not run)",
    )
    p.add_argument("--json", metavar="FILE", help="Write the audit as JSON here")
    p.add_argument("--html", metavar="FILE", help="Write the audit as an HTML page here")
    p.add_argument("--propose", metavar="DIR", help="Write the proposed held-out tests here")
    p.add_argument(
        "--strategy", action="append", metavar="NAME", help="Only this strategy (repeatable)"
    )
    p.add_argument(
        "--mutants",
        type=whole_number(0),
        default=60,
        metavar="N",
        help="Mutants at most (default 60)",
    )
    p.add_argument(
        "-j", "--jobs", type=whole_number(1), default=2, help="Candidates at once (default 2)"
    )
    p.add_argument(
        "--fail-on",
        choices=("credited",),
        help="Exit 1 when scorewright or --evaluator credits any gaming strategy (for CI)",
    )
    add_evaluator_options(p, tests_required=False)
    p.set_defaults(func=commands.cmd_audit)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="scorewright",
        description="Score candidate programs with a pytest suite as an honest fitness function.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("schema", help="Print the JSON Schema of the ScoreResult")
    p.set_defaults(func=commands.cmd_schema)

    p = sub.add_parser(
        "score",
        help="Score a candidate in a sandbox; writes a ScoreResult (exit 0 whenever written)",
    )
    p.add_argument("candidate", metavar="CANDIDATE", help="A .py file or a directory")
    p.add_argument("--out", metavar="FILE", help="Write the result here (default: stdout)")
    p.add_argument(
        "--fail-under",
        type=float,
        metavar="RATE",
        help="Exit 1 when the credited pass rate is below RATE (0-1), for CI",
    )
    _scores_candidates(p, commands.cmd_score)

    p = sub.add_parser("score-many", help="Score many candidates at once, one result file each")
    p.add_argument("candidates", nargs="+", metavar="CANDIDATE")
    p.add_argument("--out-dir", metavar="DIR", help="One <candidate>.json each")
    p.add_argument(
        "--jsonl",
        metavar="FILE",
        help="Write one ScoreResult a line as each candidate finishes (- for stdout)",
    )
    p.add_argument(
        "-j",
        "--jobs",
        type=jobs_option,
        default="auto",
        help="Candidates at once: a number, or auto (the default: the CPUs this process may "
        "use, its affinity and cgroup quota respected)",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="Skip candidates whose result is already in --out-dir / --jsonl (append to it)",
    )
    _scores_candidates(p, commands.cmd_score_many)

    _add_result_readers(sub)

    p = sub.add_parser(
        "shinka", help="Score a program for ShinkaEvolve: writes metrics.json and correct.json"
    )
    from pytest_scorewright.shinka import add_shinka_arguments, run_shinka

    add_shinka_arguments(p)
    p.set_defaults(func=run_shinka)

    _add_audit(sub)

    from pytest_scorewright.cli.verify_command import add_verify_parser

    add_verify_parser(sub)

    _add_show_and_export(sub)
    _add_serve(sub)
    p = sub.add_parser(
        "reward",
        help="Verifier for file-based protocols (Harbor's tests/test.sh): score the candidate "
        "and write a signed reward.json and reward.txt the candidate cannot forge",
    )
    p.add_argument("candidate", help="The candidate: a .py file or a directory")
    p.add_argument(
        "--reward-dir",
        default="/logs/verifier",
        metavar="DIR",
        help="Where the harness reads reward.txt / reward.json (default /logs/verifier)",
    )
    _scores_candidates(p, commands.cmd_reward)
    return parser


def _add_serve(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``serve``: candidates scored over HTTP (pytest_scorewright/reward_service.py)."""
    p = sub.add_parser("serve", help="Score candidates over HTTP for a trainer (POST /score)")
    p.add_argument("--tasks", required=True, metavar="DIR", help="One subdirectory per task")
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="Address to listen on (default 127.0.0.1; beyond it SCOREWRIGHT_TOKEN is needed)",
    )
    p.add_argument(
        "--port", type=whole_number(0), default=8000, help="Port to listen on (default 8000)"
    )
    p.add_argument(
        "--in-flight",
        type=whole_number(1),
        default=None,
        metavar="N",
        help="Candidates scored at once; more wait (--queue) (default: the CPUs it may use)",
    )
    p.add_argument(
        "--queue",
        type=whole_number(0),
        default=None,
        metavar="N",
        help="Requests waiting their turn beyond --in-flight; more get 429 "
        "(default: 64, or 4 x --in-flight if more)",
    )
    p.add_argument(
        "--server",
        choices=("embedded", "uvicorn"),
        default="embedded",
        help="What carries the requests: the standard library's server (embedded, the "
        "default) or uvicorn, an ASGI server (pip install 'pytest-scorewright[asgi]')",
    )
    p.add_argument(
        "--pipelines",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="Score in pipeline processes, this one only relaying (default: when --in-flight "
        "is more than 4, what one process keeps fed)",
    )
    p.add_argument(
        "--ray",
        metavar="ADDRESS",
        help="Score on a Ray cluster (auto: this machine's) instead of here (default: here)",
    )
    p.add_argument(
        "--ray-actors",
        type=whole_number(1),
        default=2,
        metavar="N",
        help="With --ray: actors of one CPU, each scoring one candidate at a time (default 2)",
    )
    p.add_argument(
        "--store",
        default="scorewright-serve.sqlite",
        metavar="PATH",
        help="SQLite file keeping answers by request id across restarts "
        "(default scorewright-serve.sqlite here; :memory: keeps none)",
    )
    p.set_defaults(func=commands.cmd_serve)


def _add_show_and_export(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``export`` and ``show``: the commands that read a ScoreResult already written."""
    p = sub.add_parser("export", help="Write a ScoreResult in another report format")
    p.add_argument("result", metavar="RESULT.json")
    formats = p.add_mutually_exclusive_group(required=True)
    formats.add_argument("--ctrf", action="store_true", help="As a CTRF JSON test report")
    formats.add_argument("--junit", action="store_true", help="As JUnit XML (CI systems)")
    p.add_argument("--out", metavar="FILE", help="Write the report here (default: stdout)")
    p.set_defaults(func=commands.cmd_export)

    p = sub.add_parser(
        "show",
        help="Print the headline numbers of ScoreResult files (one JSON each, or the JSON "
        "Lines score-many --jsonl writes)",
    )
    p.add_argument("results", nargs="+", metavar="RESULT.json|RESULTS.jsonl")
    p.add_argument("--failures", action="store_true", help="Also list each test that did not pass")
    p.set_defaults(func=commands.cmd_show)


def _parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """``parser.parse_args``, but an option no command knows is answered by the command's own
    usage, with the option it most looks like (``--heldot``: did you mean ``--heldout``?)."""
    args, extra = parser.parse_known_args(argv)
    if not extra:
        return args
    command = parser
    for action in parser._subparsers._group_actions if parser._subparsers else ():
        if isinstance(action, argparse._SubParsersAction):
            command = action.choices.get(args.command, parser)
    known = [o for a in command._actions for o in a.option_strings if o.startswith("--")]
    hints = []
    for word in extra:
        if word.startswith("-"):
            close = difflib.get_close_matches(word.split("=", 1)[0], known, n=1, cutoff=0.6)
            if close:
                hints.append(f"did you mean {close[0]}?")
    command.error(
        f"unrecognized arguments: {' '.join(extra)}" + (f" ({'; '.join(hints)})" if hints else "")
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = _parse(parser, argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # verify re-runs it elsewhere
    try:
        code: int = args.func(args)
    except ScorewrightError as exc:
        print(f"scorewright: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\nscorewright: interrupted", file=sys.stderr)
        return 130
    return code
