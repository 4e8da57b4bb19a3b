"""Wall-time overhead of the scorewright plugin on a real third-party test suite.

The suite is the test suites of typing_extensions 4.16.0 and docutils 0.23, taken from their
PyPI sdists (about 1,000 tests and 3,300 subtests, some 6-7 s of pytest). Each run is a fresh
``python -m pytest`` subprocess timed from the outside, in three variants:

* ``plain``: the plugin disabled (``-p no:scorewright``);
* ``plugin``: the plugin writing a ScoreResult (``--scorewright-out``), the 5% target;
* ``coverage``: the plugin with ``--scorewright-cov`` on both packages, for information.

Runs interleave (plain, plugin, coverage, plain, plugin, ...) so that drift in the machine's
speed touches every variant alike. Before timing, one untimed plain run writes pytest's own
JUnit XML and one untimed plugin run warms the caches; the plugin's per-test outcomes are then
checked against the JUnit XML, and a disagreement makes the script exit with status 1.

Every run gets the same pinned pytest configuration (rootdir and configfile of the unpacked
typing_extensions, so this repository's pyproject.toml is not picked up), bytecode caching on
(``PYTHONDONTWRITEBYTECODE`` is dropped; the cache goes under ``benchmarks/.cache/pycache``),
and no ``PYTEST_ADDOPTS`` or ``SCOREWRIGHT_*`` variables. Besides wall time, the child's CPU
time (user + system) is reported, which tells scheduling noise from a slower machine.

Usage::

    .venv/bin/python -m benchmarks.plugin_overhead [--runs 5] [--cov-runs 3] [--json out.json]

The sdists are downloaded with pip into ``benchmarks/.cache/`` on first use.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from benchmarks.sdists import download, junit_key, read_junit

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache"

#: (distribution, version, test directory inside the unpacked sdist)
SDISTS: tuple[tuple[str, str, str], ...] = (
    ("typing_extensions", "4.16.0", "src"),
    ("docutils", "0.23", "test"),
)
TE_DIR = "typing_extensions-4.16.0"
#: typing_extensions' tests import the package from its own source tree.
PYTHONPATH = f"{TE_DIR}/src"
COV_SOURCES = ("typing_extensions", "docutils")

#: The cache lives inside this repository, whose pyproject.toml would otherwise become the
#: suite's pytest config (its addopts, xfail_strict). Pin what pytest picks on its own when the
#: sdists are unpacked anywhere else: rootdir and configfile from typing_extensions (which has
#: no pytest settings), and no conftest.py from above the cache.
ISOLATION = (
    f"--rootdir={TE_DIR}",
    "-c",
    f"{TE_DIR}/pyproject.toml",
    "--confcutdir=.",
)
BASE_ARGS = ("-m", "pytest", "-q", "-p", "no:cacheprovider", *ISOLATION)
SUMMARY_RE = re.compile(r"\bin \d+(\.\d+)?s\b")


class BenchmarkError(Exception):
    """A one-line reason the benchmark could not run."""


@dataclass(frozen=True)
class Run:
    variant: str
    wall_s: float
    #: user + system CPU time of the pytest process, less sensitive to a busy machine.
    cpu_s: float
    summary: str


# -- the suite -----------------------------------------------------------------------------


def sdist_dir(name: str, version: str) -> str:
    return f"{name}-{version}"


def test_paths() -> list[str]:
    return [f"{sdist_dir(n, v)}/{sub}" for n, v, sub in SDISTS]


def ensure_suite(cache: Path) -> Path:
    """Download and unpack the sdists into ``cache`` unless they are there already."""
    missing = [(n, v) for n, v, sub in SDISTS if not (cache / sdist_dir(n, v) / sub).is_dir()]
    if not missing:
        return cache
    why = download([f"{n}=={v}" for n, v in missing], cache)
    if why is not None:
        raise BenchmarkError(why)
    still = [f"{n}=={v}" for n, v, sub in SDISTS if not (cache / sdist_dir(n, v) / sub).is_dir()]
    if still:
        raise BenchmarkError(
            f"after download, {', '.join(still)} has no test directory in {cache}; "
            f"delete {cache} and run again"
        )
    return cache


def run_env(suite: Path) -> dict[str, str]:
    dropped = ("PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTHONDONTWRITEBYTECODE")
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("SCOREWRIGHT_") and k not in dropped
    }
    env["PYTHONPATH"] = PYTHONPATH
    # Bytecode caching on, as on a developer's machine (with PYTHONDONTWRITEBYTECODE every run
    # would recompile the plugin and pytest's rewritten test modules), but written under the
    # cache rather than next to the sources.
    env["PYTHONPYCACHEPREFIX"] = str(suite / "pycache")
    return env


def variant_args(variant: str, out: Path) -> list[str]:
    if variant == "plain":
        return ["-p", "no:scorewright"]
    args = [f"--scorewright-out={out}"]
    if variant == "coverage":
        args += [f"--scorewright-cov={src}" for src in COV_SOURCES]
    return args


def run_pytest(variant: str, suite: Path, extra: Sequence[str]) -> Run:
    cmd = [sys.executable, *BASE_ARGS, *extra, *test_paths()]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(
        cmd, cwd=suite, env=run_env(suite), capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = [ln.strip() for ln in proc.stdout.splitlines() if SUMMARY_RE.search(ln)]
    summary = lines[-1] if lines else "(no summary line)"
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-5:]
        raise BenchmarkError(
            f"{variant} run exited {proc.returncode}: {' | '.join(tail) or 'no output'}"
        )
    return Run(variant, wall, cpu, summary)


# -- correctness: the plugin's outcomes against pytest's JUnit XML -------------------------


def junit_category(outcome: str, phase: str | None) -> str:
    """What JUnit XML records for a test the plugin gave ``outcome``."""
    if outcome in ("passed", "xpassed"):
        return "passed"
    if outcome in ("skipped", "xfailed"):
        return "skipped"
    if outcome == "timeout":
        return "error" if phase in ("setup", "teardown") else "failed"
    if outcome in ("failed", "error"):
        return outcome
    return "absent"  # not_run: never reported, so not in the XML


@dataclass(frozen=True)
class Agreement:
    agreed: int
    total: int
    collection_skips: int
    problems: tuple[str, ...]
    plugin_counts: Mapping[str, int]
    junit_counts: Mapping[str, int]


def compare(result: Mapping[str, Any], junit: Mapping[tuple[str, str], str]) -> Agreement:
    tests: list[Mapping[str, Any]] = list(result["tests"])
    collection_errors = {junit_key(c["nodeid"]) for c in result.get("collection_errors", [])}
    problems: list[str] = []
    seen: set[tuple[str, str]] = set()
    agreed = 0
    for t in tests:
        key = junit_key(t["nodeid"])
        seen.add(key)
        want = junit_category(t["outcome"], t["phase"])
        got = junit.get(key, "absent")
        # JUnit keeps one verdict per testcase: a passing test with a skipped subtest is
        # written as <skipped/>, though pytest counts the test as passed (and so does the
        # plugin, which records the skip in the test's subtest counts).
        skipped_subtest = bool((t.get("subtests") or {}).get("skipped"))
        if got == want or (want == "passed" and got == "skipped" and skipped_subtest):
            agreed += 1
        else:
            problems.append(f"{t['nodeid']}: plugin {t['outcome']}, junit {got}")
    collection_skips = 0
    for key, cat in junit.items():
        if key in seen:
            continue
        # A testcase with an empty classname stands for a module's collection report (a test
        # item's nodeid always has a "::"): a module skipped at import, which pytest counts
        # among its skips but which has no test in ScoreResult.tests, or a collection error,
        # which must be among the ScoreResult's collection_errors.
        module_level = key[0] == ""
        if module_level and cat == "skipped":
            collection_skips += 1
        elif module_level and cat == "error" and key in collection_errors:
            continue
        else:
            problems.append(f"{'::'.join(key)}: junit {cat}, not in the ScoreResult")
    return Agreement(
        agreed=agreed,
        total=len(tests),
        collection_skips=collection_skips,
        problems=tuple(problems),
        plugin_counts=dict(Counter(str(t["outcome"]) for t in tests)),
        junit_counts=dict(Counter(junit.values())),
    )


# -- reporting -----------------------------------------------------------------------------


def machine_stamp() -> dict[str, str]:
    import pytest

    stamp = {
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "platform": platform.platform(),
        "cpu_count": str(os.cpu_count()),
        "pytest": pytest.__version__,
    }
    try:
        proc = subprocess.run(
            ["git", "describe", "--always", "--dirty"],
            cwd=HERE,
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError:
        return stamp
    if proc.returncode == 0:
        stamp["commit"] = proc.stdout.strip()
    return stamp


def fmt_counts(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{n} {k}" for k, n in sorted(counts.items(), key=lambda kv: -kv[1]))


def overhead(base: float, other: float) -> float:
    return (other / base - 1.0) * 100.0


def spread_pct(walls: Sequence[float]) -> float:
    """Sample standard deviation as a percentage of the median (0 for a single run)."""
    if len(walls) < 2:
        return 0.0
    return statistics.stdev(walls) / statistics.median(walls) * 100.0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=5, help="timed runs per variant (5)")
    parser.add_argument(
        "--cov-runs", type=int, default=3, help="timed runs of the coverage variant (3; 0 skips)"
    )
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write the results here")
    parser.add_argument(
        "--cache", type=Path, default=CACHE, help=f"where the sdists live ({CACHE})"
    )
    args = parser.parse_args(argv)
    if args.runs < 1 or args.cov_runs < 0:
        parser.error("--runs must be at least 1 and --cov-runs at least 0")
    try:
        return benchmark(args.runs, args.cov_runs, args.json, args.cache.resolve())
    except BenchmarkError as exc:
        print(f"plugin_overhead: {exc}", file=sys.stderr)
        return 2


def benchmark(runs: int, cov_runs: int, json_out: Path | None, cache: Path) -> int:
    suite = ensure_suite(cache)
    stamp = machine_stamp()
    print("machine: " + ", ".join(f"{k} {v}" for k, v in stamp.items()))
    print(f"suite:   {' '.join(test_paths())} (in {suite})")

    with tempfile.TemporaryDirectory(prefix="scorewright-bench-") as tmpdir:
        tmp = Path(tmpdir)
        out = tmp / "fitness.json"
        junit_path = tmp / "junit.xml"
        # Untimed: pytest's own record of the outcomes, and a warm-up of both variants.
        run_pytest("junit", suite, ["-p", "no:scorewright", f"--junitxml={junit_path}"])
        run_pytest("plugin", suite, variant_args("plugin", out))
        order = ["plain", "plugin", "coverage"]
        timed: dict[str, list[Run]] = {v: [] for v in order}
        result: dict[str, Any] = {}
        cov_result: dict[str, Any] = {}
        for i in range(runs):
            for variant in order:
                if variant == "coverage" and i >= cov_runs:
                    continue
                run = run_pytest(variant, suite, variant_args(variant, out))
                timed[variant].append(run)
                print(f"  round {i + 1}/{runs} {variant:<8} {run.wall_s:7.3f} s", flush=True)
                if variant == "plugin":
                    result = json.loads(out.read_text(encoding="utf-8"))
                elif variant == "coverage":
                    cov_result = json.loads(out.read_text(encoding="utf-8"))
        try:
            agreement = compare(result, read_junit(junit_path))
        except ValueError as exc:  # two testcases of one name
            raise BenchmarkError(str(exc)) from None

    walls = {v: [r.wall_s for r in rs] for v, rs in timed.items() if rs}
    cpus = {v: [r.cpu_s for r in rs] for v, rs in timed.items() if rs}
    med = {v: statistics.median(w) for v, w in walls.items()}
    mins = {v: min(w) for v, w in walls.items()}
    spread = {v: spread_pct(w) for v, w in walls.items()}
    cpu_med = {v: statistics.median(c) for v, c in cpus.items()}
    print()
    print(
        f"{'variant':<10}{'runs':>5}{'median s':>11}{'min s':>9}{'spread':>9}{'overhead':>10}"
        f"{'cpu s':>9}{'cpu ovh':>9}"
    )
    for v, w in walls.items():
        oh = "" if v == "plain" else f"{overhead(med['plain'], med[v]):+.1f}%"
        cpu_oh = "" if v == "plain" else f"{overhead(cpu_med['plain'], cpu_med[v]):+.1f}%"
        print(
            f"{v:<10}{len(w):>5}{med[v]:>11.3f}{mins[v]:>9.3f}{spread[v]:>8.1f}%{oh:>10}"
            f"{cpu_med[v]:>9.3f}{cpu_oh:>9}"
        )
    plugin_oh = overhead(med["plain"], med["plugin"])
    paired_oh = statistics.median(
        overhead(a, b) for a, b in zip(walls["plain"], walls["plugin"], strict=True)
    )
    verdict = "within" if plugin_oh < 5.0 else "OVER"
    print(
        f"plugin overhead: {plugin_oh:+.1f}% by median ({verdict} the 5% target); "
        f"{overhead(mins['plain'], mins['plugin']):+.1f}% by min, "
        f"{paired_oh:+.1f}% median of the per-round pairs, "
        f"{overhead(cpu_med['plain'], cpu_med['plugin']):+.1f}% in median CPU time"
    )
    if spread["plain"] >= 5.0:
        print(
            f"note: plain runs spread {spread['plain']:.1f}% (stdev/median), as much as the "
            "target; the machine is noisy, use more --runs"
        )
    cov_line: float | None = None
    if "coverage" in med:
        cov_line = next(
            (s["value"] for s in cov_result["signals"] if s["name"] == "line_coverage"), None
        )
        shown = "not measured" if cov_line is None else f"{cov_line:.1%}"
        print(
            f"coverage variant: {overhead(med['plain'], med['coverage']):+.1f}% by median "
            f"(not part of the target); line coverage {shown}"
        )
    last_plain = timed["plain"][-1].summary
    print(f"last plain run: {last_plain}")
    print(f"plugin tests: {fmt_counts(agreement.plugin_counts)}")
    print(
        f"junit cases:  {fmt_counts(agreement.junit_counts)} "
        f"({agreement.collection_skips} of them modules skipped at collection)"
    )
    print(f"agreement: {agreement.agreed}/{agreement.total} tests")
    for problem in agreement.problems[:20]:
        print(f"  disagreement: {problem}")
    if len(agreement.problems) > 20:
        print(f"  ... and {len(agreement.problems) - 20} more")

    if json_out is not None:
        report = {
            "date": datetime.now(timezone.utc).date().isoformat(),
            "machine": stamp,
            "suite": test_paths(),
            "walls_s": walls,
            "cpu_s": cpus,
            "median_s": med,
            "min_s": mins,
            "spread_pct": spread,
            "plugin_overhead_pct": plugin_oh,
            "plugin_overhead_paired_pct": paired_oh,
            "plugin_overhead_cpu_pct": overhead(cpu_med["plain"], cpu_med["plugin"]),
            "coverage_overhead_pct": (
                overhead(med["plain"], med["coverage"]) if "coverage" in med else None
            ),
            "coverage_line": cov_line,
            "last_plain_summary": last_plain,
            "agreement": {
                "agreed": agreement.agreed,
                "total": agreement.total,
                "collection_skips": agreement.collection_skips,
                "problems": list(agreement.problems),
            },
        }
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {json_out}")
    return 0 if not agreement.problems and agreement.agreed == agreement.total else 1


if __name__ == "__main__":
    sys.exit(main())
