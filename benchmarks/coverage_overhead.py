"""Coverage overhead: the plugin's --scorewright-cov against pytest-cov, on a real suite.

Run from the project root, with pytest-cov installed (``pip install -e '.[bench]'``):

    python -m benchmarks.coverage_overhead [--runs N]

The suite is plugin_overhead.py's (typing_extensions 4.16.0 + docutils 0.23, fetched into
benchmarks/.cache on first use). Every run is a fresh ``python -m pytest`` subprocess of the
interpreter running this script, the variants interleaved so that the machine's drift touches
each alike:

- plain: no coverage, no plugin;
- scorewright: ``--scorewright-out --scorewright-cov=...`` (coverage.py's API; the sysmon
  core on Python >= 3.12, where coverage.py would otherwise use its C tracer);
- pytest-cov: ``--cov=... --cov-report=json`` (coverage.py's default core);
- pytest-cov sysmon (Python >= 3.12 only): the same with ``COVERAGE_CORE=sysmon``.

It prints median wall time, the overhead over plain, and each variant's line coverage, which
must agree (both are coverage.py's figure).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from benchmarks.plugin_overhead import (
    BASE_ARGS,
    CACHE,
    COV_SOURCES,
    BenchmarkError,
    ensure_suite,
    machine_stamp,
    run_env,
    test_paths,
)


def variants() -> dict[str, tuple[list[str], dict[str, str]]]:
    cov = [f"--cov={src}" for src in COV_SOURCES]
    ours = [f"--scorewright-cov={src}" for src in COV_SOURCES]
    found: dict[str, tuple[list[str], dict[str, str]]] = {
        "plain": (["-p", "no:scorewright", "-p", "no:pytest_cov"], {}),
        "scorewright": (["-p", "no:pytest_cov", "--scorewright-out={out}", *ours], {}),
        "pytest-cov": (["-p", "no:scorewright", *cov, "--cov-report=json:{out}"], {}),
    }
    if sys.version_info >= (3, 12):
        found["pytest-cov sysmon"] = (found["pytest-cov"][0], {"COVERAGE_CORE": "sysmon"})
    return found


def line_coverage(variant: str, out: Path) -> float | None:
    data = json.loads(out.read_text(encoding="utf-8"))
    if variant == "scorewright":
        signal = next((s for s in data["signals"] if s["name"] == "line_coverage"), None)
        return None if signal is None else round(100 * signal["value"], 2)
    totals = data["totals"]
    return round(100 * float(totals["covered_lines"]) / max(float(totals["num_statements"]), 1), 2)


def run(
    variant: str, suite: Path, args: list[str], extra_env: dict[str, str]
) -> tuple[float, float | None]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.json"
        cmd = [sys.executable, *BASE_ARGS, *(a.format(out=out) for a in args), *test_paths()]
        env = run_env(suite)
        env.pop("COVERAGE_CORE", None)  # each variant's core is its own choice
        env.update(extra_env)
        start = time.perf_counter()
        proc = subprocess.run(cmd, cwd=suite, env=env, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            tail = (proc.stdout + proc.stderr).strip().splitlines()[-3:]
            raise BenchmarkError(f"{variant} run exited {proc.returncode}: {' | '.join(tail)}")
        return wall, (line_coverage(variant, out) if variant != "plain" else None)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="timed runs per variant (5)")
    args = parser.parse_args(argv)
    if importlib.util.find_spec("pytest_cov") is None:
        print("pytest-cov is not installed; pip install -e '.[bench]'", file=sys.stderr)
        return 2
    try:
        suite = ensure_suite(CACHE)
        chosen = variants()
        print(json.dumps(machine_stamp()), flush=True)
        for name, (vargs, venv) in chosen.items():  # untimed warm-up (bytecode caches)
            run(name, suite, vargs, venv)
        walls: dict[str, list[float]] = {name: [] for name in chosen}
        figures: dict[str, float | None] = {}
        for _ in range(args.runs):
            for name, (vargs, venv) in chosen.items():
                wall, figure = run(name, suite, vargs, venv)
                walls[name].append(wall)
                figures[name] = figure
    except BenchmarkError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    base = statistics.median(walls["plain"])
    print(f"\n{'variant':18} {'median s':>9} {'overhead':>9} {'line cov %':>11}")
    for name, values in walls.items():
        median = statistics.median(values)
        figure = figures[name]
        print(
            f"{name:18} {median:9.3f} {100 * (median / base - 1):+8.1f}% "
            f"{'' if figure is None else f'{figure:.2f}':>11}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
