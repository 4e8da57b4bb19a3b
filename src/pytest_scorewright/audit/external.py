"""The same gaming candidates through a user's own evaluator: an OpenEvolve-style file with
``evaluate(program_path)`` returning a dict (or an object with ``.metrics``), or a
ShinkaEvolve script run as ``evaluate.py --program_path P --results_dir D`` that writes
``metrics.json``. Each candidate is evaluated in a fresh process of its own (the evaluator's
directory as working directory, a wall-clock limit): a candidate that kills or hangs its
evaluator costs that one score, never the audit. The evaluator is the user's code; these
processes are not the Evaluator's sandbox.
"""

from __future__ import annotations

import ast
import json
import math
import subprocess
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from pytest_scorewright._text import bound_message
from pytest_scorewright.audit.facts import learn
from pytest_scorewright.audit.oracle import answers, site_request
from pytest_scorewright.audit.strategies import BASELINE, by_name
from pytest_scorewright.errors import ConfigError
from pytest_scorewright.sandbox.workspace import private_tempdir

TIMEOUT_S = 300.0

#: Loads the evaluator by path and calls ``evaluate(program)``; the score goes to a file, so
#: whatever the evaluator or the candidate prints cannot pass for it.
_OPENEVOLVE = """
import importlib.util, json, math, sys
spec = importlib.util.spec_from_file_location("user_evaluator", sys.argv[1])
module = importlib.util.module_from_spec(spec)
sys.modules["user_evaluator"] = module
spec.loader.exec_module(module)
result = module.evaluate(sys.argv[2])
metrics = getattr(result, "metrics", result)
metrics = {k: float(v) for k, v in dict(metrics).items()
           if isinstance(v, (int, float)) and not isinstance(v, bool)}
with open(sys.argv[3], "w") as fh:
    json.dump(metrics, fh)
"""


def kind_of(evaluator: Path) -> str:
    """``openevolve`` where the file defines ``evaluate``, else ``shinka`` (a script)."""
    try:
        tree = ast.parse(evaluator.read_text(encoding="utf-8"), str(evaluator))
    except (OSError, SyntaxError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--evaluator {evaluator}: cannot read it as Python ({exc})") from None
    defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    return "openevolve" if "evaluate" in defined else "shinka"


def score_of(metrics: dict[str, Any]) -> float | None:
    """``combined_score``, else the mean of the numeric metrics (OpenEvolve's own rule)."""
    numbers = {
        k: float(v)
        for k, v in metrics.items()
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(float(v))
    }
    if "combined_score" in numbers:
        return numbers["combined_score"]
    return sum(numbers.values()) / len(numbers) if numbers else None


def run_evaluator(
    evaluator: Path, program: Path, *, timeout_s: float = TIMEOUT_S
) -> tuple[float | None, str]:
    """The evaluator's score of ``program`` (None where it gave none), and what happened."""
    kind = kind_of(evaluator)
    with private_tempdir("scorewright-red-") as tmp:
        out = Path(tmp, "metrics.json")
        if kind == "openevolve":
            command = [sys.executable, "-c", _OPENEVOLVE, str(evaluator), str(program), str(out)]
        else:
            command = [
                sys.executable,
                str(evaluator),
                "--program_path",
                str(program),
                "--results_dir",
                str(tmp),
            ]
        try:
            proc = subprocess.run(  # noqa: S603 - the user's evaluator, with this interpreter
                command,
                cwd=evaluator.parent,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return None, f"timed out after {timeout_s:g}s"
        try:
            metrics = json.loads(out.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
            return None, bound_message(f"no metrics (exit {proc.returncode}): {tail[0]}", 200)
    if not isinstance(metrics, dict):
        return None, "metrics.json is not an object"
    return score_of(metrics), f"{kind}, exit {proc.returncode}"


def audit_evaluator(
    evaluator: Path,
    reference: Path,
    module: str,
    tests: Path | None,
    *,
    strategies: Sequence[str] | None = None,
    workers: int = 2,
) -> dict[str, Any]:
    """Each gaming candidate's score from the user's evaluator, against a plainly wrong
    candidate's; the reference's score beside them."""
    kind_of(evaluator)  # an unreadable evaluator is said before any work
    facts = learn(reference, tests, module) if tests is not None else None
    if facts is None:
        from pytest_scorewright.audit.facts import Facts, reference_modules

        facts = Facts(reference, module, reference_modules(reference, module))
    visible = answers(reference, [module], facts.names, [site_request(c) for c in facts.calls])
    chosen = by_name(strategies)
    with private_tempdir("scorewright-audit-") as tmp:
        paths = [_program(s.write(facts, visible, Path(tmp, s.name)), module) for s in chosen]
        ref_program = _reference_program(reference, module)
        with ThreadPoolExecutor(max_workers=workers) as pool:
            scored = list(pool.map(lambda p: run_evaluator(evaluator, p), [ref_program, *paths]))
    (ref_score, ref_how), rest = scored[0], scored[1:]
    floor = rest[0][0] if rest[0][0] is not None else 0.0
    rows = [
        {
            "name": s.name,
            "threat": s.code,
            "what": s.what,
            "score": score,
            "how": how,
            "credited": s.name != BASELINE and score is not None and score > floor + 1e-9,
        }
        for s, (score, how) in zip(chosen, rest, strict=True)
    ]
    return {
        "evaluator": str(evaluator),
        "kind": kind_of(evaluator),
        "reference_score": ref_score,
        "reference_how": ref_how,
        "baseline_score": rest[0][0],
        "strategies": rows,
        "credited": [r["name"] for r in rows if r["credited"]],
    }


def _program(candidate: Path, module: str) -> Path:
    """The file an evaluator of single programs is given: the module file (a conftest.py and
    other files the strategy made stay beside it); a package's directory otherwise."""
    single = candidate / f"{module}.py"
    return single if single.is_file() else candidate


def _reference_program(reference: Path, module: str) -> Path:
    return reference if reference.is_file() else _program(reference, module)
