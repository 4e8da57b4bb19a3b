"""The ``scorewright`` command.

Exit status: 0 when the command did its job, 2 for a usage error (one line on stderr).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from pytest_scorewright._version import __version__
from pytest_scorewright.errors import ScorewrightError
from pytest_scorewright.result import ScoreResult
from pytest_scorewright.schema import schema_text
from pytest_scorewright.summary import summary_lines


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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="scorewright",
        description="Score candidate programs with a pytest suite as an honest fitness function.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("schema", help="Print the JSON Schema of the ScoreResult")
    p.set_defaults(func=_cmd_schema)

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
