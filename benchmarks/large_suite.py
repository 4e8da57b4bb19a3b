"""Per-candidate cost of the evaluator on a large real suite, against plain pytest.

The suite is a real library's own tests from its PyPI sdist (benchmarks/real_suites.py pins
them; idna 3.20 by default: 6,441 tests), the candidate its package. Per round, interleaved
so that drift in the machine's speed touches every variant alike:

* ``plain``: a fresh ``python -m pytest -q -p no:cacheprovider`` process on the same code (the
  candidate first on PYTHONPATH, pytest-timeout at the same per-test limit), timed from the
  outside; pytest's own session time (the ``in N s`` of its summary line) is kept too;
* ``evaluator``: ``Evaluator.score(candidate)`` on the whole suite as visible tests, with the
  Evaluator built once (warm parent started, suite collected, reference measured: the cost
  paid once per loop, not per candidate), timed around the call.

It prints the medians and two ratios: the evaluator's time per candidate over the plain
process's wall time, and over pytest's own session time in that process (the target: at
most 1.3 times the plain process). ``--split`` also times the evaluator with every third
test file held out (the two runs then go at once). Each candidate's per-test outcomes are checked
against plain pytest's once, before timing (real_suites.compare); a disagreement beyond
one test exits with status 1.

Usage::

    .venv/bin/python -m benchmarks.large_suite [--library idna] [--runs 5] [--split]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from benchmarks.plugin_overhead import machine_stamp
from benchmarks.real_suites import (
    LIBRARIES,
    Layout,
    SuiteError,
    compare,
    ensure_sdists,
    lay_out,
    plain_pytest,
)
from pytest_scorewright.evaluator import Evaluator
from pytest_scorewright.limits import Limits

SESSION_RE = re.compile(r"\bin (\d+(?:\.\d+)?)s\b")


def plain_run(layout: Layout, candidate: Path) -> tuple[float, float]:
    """(wall time of the whole process, pytest's own session time)."""
    lib = layout.library
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "SCOREWRIGHT_"))}
    env["PYTHONPATH"] = str(candidate)
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # as in a run: no bytecode left for the next
    cmd = [
        sys.executable,
        *("-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:scorewright"),
        *("-c", "pytest.ini", "--rootdir", "."),
        *(f"--timeout={lib.test_timeout_s:g}", "--timeout-method=signal"),
        "tests",
    ]
    started = time.perf_counter()
    proc = subprocess.run(
        cmd, cwd=layout.suite.parent, env=env, capture_output=True, text=True, timeout=1800
    )
    wall = time.perf_counter() - started
    found = SESSION_RE.findall(proc.stdout.strip().splitlines()[-1] if proc.stdout else "")
    if proc.returncode not in (0, 1) or not found:
        raise SuiteError(f"plain pytest exited {proc.returncode}: {proc.stdout[-300:]}")
    return wall, float(found[-1])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--library", default="idna", help="a distribution of real_suites (idna)")
    parser.add_argument("--runs", type=int, default=5, help="timed rounds (5)")
    parser.add_argument("--split", action="store_true", help="also time a held-out split")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args(argv)
    chosen = [lib for lib in LIBRARIES if lib.dist == args.library]
    if not chosen:
        print(f"no library {args.library!r}; choose from {[x.dist for x in LIBRARIES]}")
        return 2
    lib = chosen[0]
    try:
        cache = ensure_sdists(chosen)
        with tempfile.TemporaryDirectory(prefix="scorewright-large-") as tmp:
            layout = lay_out(lib, cache, Path(tmp))
            figures = measure(layout, args.runs, args.split)
    except SuiteError as exc:
        print(f"large_suite: error: {exc}", file=sys.stderr)
        return 2
    figures["machine"] = machine_stamp()
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0 if figures["agreement_ok"] else 1


def measure(layout: Layout, runs: int, split: bool) -> dict[str, object]:
    lib = layout.library
    limits = Limits(
        timeout_s=max(lib.budget_s, 120.0),
        test_timeout_s=lib.test_timeout_s,
        processes=lib.processes,
    )
    candidates = [layout.candidates["pristine"], layout.candidates[lib.mutants[0].name]]
    kwargs = {
        "reference": layout.reference,
        "module": list(lib.packages),
        "limits": limits,
        "reference_baseline": lib.baseline,
    }
    evaluators = {"evaluator": Evaluator(layout.suite, **kwargs)}  # type: ignore[arg-type]
    if split:
        evaluators["evaluator_split"] = Evaluator(
            layout.visible / "tests",
            heldout=layout.heldout / "tests",
            **kwargs,  # type: ignore[arg-type]
        )
    try:
        agreement_ok = True
        for candidate in candidates:
            junit, summary = plain_pytest(layout, candidate)
            result = evaluators["evaluator"].score(candidate)
            problems = compare(result, junit)
            agreement_ok &= len(problems) <= 1 and result.ok
            print(
                f"{candidate.name}: {len(result.tests) - len(problems)}/{len(result.tests)} "
                f"tests as plain pytest ({summary})",
                flush=True,
            )
        times: dict[str, list[float]] = {"plain": [], "plain_session": []}
        times.update({name: [] for name in evaluators})
        for round_ in range(runs):
            for candidate in candidates:
                wall, session = plain_run(layout, candidate)
                times["plain"].append(wall)
                times["plain_session"].append(session)
                for name, ev in evaluators.items():
                    started = time.perf_counter()
                    ev.score(candidate)
                    times[name].append(time.perf_counter() - started)
            print(f"round {round_ + 1}/{runs} done", flush=True)
    finally:
        for ev in evaluators.values():
            ev.close()
    medians = {name: statistics.median(values) for name, values in times.items()}
    tests = len(result.tests)
    print(f"{lib.dist} {lib.version}: {tests} tests, {runs} rounds x {len(candidates)} candidates")
    for name, value in medians.items():
        print(f"  {name:<16} median {value:7.3f} s")
    ratio = medians["evaluator"] / medians["plain"]
    ratio_session = medians["evaluator"] / medians["plain_session"]
    print(f"  evaluator / plain process: {ratio:.3f}x   (target <= 1.3x)")
    print(f"  evaluator / plain session: {ratio_session:.3f}x")
    if split:
        print(f"  split / plain process:     {medians['evaluator_split'] / medians['plain']:.3f}x")
    return {
        "library": f"{lib.dist}-{lib.version}",
        "tests": tests,
        "runs": runs,
        "medians_s": medians,
        "ratio_process": ratio,
        "ratio_session": ratio_session,
        "times_s": times,
        "agreement_ok": agreement_ok,
    }


if __name__ == "__main__":
    sys.exit(main())
