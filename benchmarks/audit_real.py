"""``scorewright audit`` on real libraries' own suites (issue 31's done-when).

Each library from its pinned PyPI sdist: the library's package is the reference, its own
test directory the suite. The audit runs as a user runs it (``scorewright audit`` in a
subprocess, ``--json`` and ``--propose``), and then this script checks, per library:

* the audit ran to completion (exit 0, a JSON report);
* plain pytest credits several strategies (at least ``MIN_NAIVE``);
* scorewright credits none;
* every proposed held-out test passes the reference and fails each mutant it claims to
  kill, checked with plain pytest on the written file (the mutants made again with the
  audit's own mutator, the same ``--mutants``);
* on humanize and semver, at least one such test is proposed (cachetools' and toolz's
  suites leave no survivor a new plain-argument call tells apart: see docs/audit.md).

Usage::

    .venv/bin/python -m benchmarks.audit_real [--only toolz] [--mutants 40] [--json out.json]

The sdists are downloaded with pip into ``benchmarks/.cache/real_suites/`` on first use.
Exit status 1 when a check fails.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.sdists import download
from pytest_scorewright.audit.facts import learn
from pytest_scorewright.audit.mutants import mutants
from pytest_scorewright.audit.oracle import answers, site_request

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache" / "real_suites"
#: "Several": plain pytest must credit at least this many strategies.
MIN_NAIVE = 3


@dataclass(frozen=True)
class Library:
    dist: str
    version: str
    #: The package's directory inside the sdist, and the suite's.
    package: str
    tests: str
    #: Test files left out of the suite (another package's, or doctests of the docs).
    skip: tuple[str, ...] = ()
    #: Where ``tests`` is the sdist's root: the test files to take from it.
    files: tuple[str, ...] = ()
    #: The audit must propose at least one confirmed held-out test here.
    proposes: bool = False

    @property
    def unpacked(self) -> str:
        return f"{self.dist.replace('-', '_')}-{self.version}"

    @property
    def module(self) -> str:
        return Path(self.package).name.removesuffix(".py")


LIBRARIES = (
    # Class-shaped: the tests subclass and index LRUCache & co, decorate with @cached.
    Library("cachetools", "8.0.1", "src/cachetools", "tests"),
    # Function-shaped: many plain-argument calls (nth(2, "ABCDE")); its tests kill nearly
    # every mutant in them. test_tlz.py tests the sibling package tlz, not the reference.
    Library("toolz", "1.0.0", "toolz", "toolz/tests", skip=("test_tlz.py",)),
    # Function-shaped, parametrized tables of plain values (intcomma(*test_args)).
    # test_time.py needs freezegun, test_i18n.py compiled catalogs: neither is in the sdist.
    Library(
        "humanize",
        "4.12.3",
        "src/humanize",
        "tests",
        skip=("test_time.py", "test_i18n.py"),
        proposes=True,
    ),
    # A single module; version strings in, strings and exit codes out (match("2.3.7",
    # ">=2.3.6"), main(["check", "1.0.0"])). test_typeerror-274.py is not collected by name.
    Library("semver", "2.13.0", "semver.py", ".", files=("test_semver.py",), proposes=True),
)


def lay_out(lib: Library, work: Path) -> tuple[Path, Path]:
    """The reference (a directory holding the package, tests left out) and the suite."""
    sdist = CACHE / lib.unpacked
    if not (sdist / lib.tests).is_dir():
        why = download([f"{lib.dist}=={lib.version}"], CACHE)
        if why is not None:
            raise SystemExit(f"audit_real: {why}")
    reference, tests = work / lib.dist / "reference", work / lib.dist / "tests"
    inside = (
        Path(lib.tests).relative_to(lib.package).parts[0]
        if lib.tests.startswith(lib.package + "/")
        else None
    )
    if (sdist / lib.package).is_file():
        reference.mkdir(parents=True)
        shutil.copy2(sdist / lib.package, reference / lib.package)
    else:
        shutil.copytree(
            sdist / lib.package,
            reference / lib.module,
            ignore=shutil.ignore_patterns("__pycache__", *([inside] if inside else [])),
        )
    if lib.files:
        tests.mkdir(parents=True)
        for name in lib.files:
            shutil.copy2(sdist / lib.tests / name, tests / name)
    else:
        shutil.copytree(
            sdist / lib.tests, tests, ignore=shutil.ignore_patterns("__pycache__", *lib.skip)
        )
    return reference, tests


def _pytest(suite: Path, program: Path) -> int:
    """Plain pytest's exit status for the file(s) in ``suite`` with ``program`` importable."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "SCOREWRIGHT_"))}
    env["PYTHONPATH"] = str(program)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p"]
    return subprocess.run(
        [*command, "no:scorewright", str(suite)],
        cwd=suite if suite.is_dir() else suite.parent,
        env=env,
        capture_output=True,
        timeout=600,
        check=False,
    ).returncode


def check_proposals(
    report: dict[str, Any],
    reference: Path,
    suite: Path,
    proposed: Path,
    module: str,
    max_mutants: int,
) -> list[str]:
    """Each proposed test passes the reference and fails each mutant it names."""
    tests = report["proposals"]["tests"]
    if not tests:
        return []
    problems = []
    if _pytest(proposed, reference) != 0:
        problems.append("the proposed tests fail the reference")
    facts = learn(reference, suite, module)  # the audit's own mutants, made again
    calls = [site_request(c) for c in facts.calls]
    focus = {a.function for a in answers(reference, [module], facts.names, calls) if a.literal}
    made = {m.name: m for m in mutants(reference, facts.modules, max_mutants, focus)}
    with tempfile.TemporaryDirectory(prefix="audit-real-") as tmp:
        for test in tests:
            for name in test["kills"]:
                home = made[name].write(reference, Path(tmp, name.replace(":", "_")))
                if _pytest(proposed / "test_proposed_heldout.py", home) == 0:
                    problems.append(f"{test['name']} does not fail {name}")
    return problems


def audit_one(lib: Library, work: Path, max_mutants: int, jobs: int) -> dict[str, Any]:
    reference, tests = lay_out(lib, work)
    out, proposed = work / f"{lib.dist}.json", work / f"{lib.dist}-proposed"
    command = [sys.executable, "-m", "pytest_scorewright.cli", "audit", "--tests", str(tests)]
    command += ["--reference", str(reference), "--module", lib.module, "--json", str(out)]
    command += ["--propose", str(proposed), "--mutants", str(max_mutants), "-j", str(jobs)]
    started = time.perf_counter()
    run = subprocess.run(command, cwd=work, capture_output=True, text=True, check=False)
    took = time.perf_counter() - started
    print(
        f"$ scorewright audit --tests {lib.dist}/tests --reference {lib.dist}/reference "
        f"--module {lib.module} --mutants {max_mutants} -j {jobs}"
    )
    print(run.stdout.rstrip())
    print(f"({took:.0f} s, exit {run.returncode})\n")
    problems = [] if run.returncode == 0 else [f"audit exited {run.returncode}: {run.stderr}"]
    if run.returncode != 0 or not out.is_file():
        return {"library": lib.dist, "seconds": took, "problems": problems}
    suite = json.loads(out.read_text(encoding="utf-8"))["suite"]
    if len(suite["naive_credited"]) < MIN_NAIVE:
        problems.append(f"plain pytest credits only {suite['naive_credited']}")
    if suite["scorewright_credited"]:
        problems.append(f"scorewright credits {suite['scorewright_credited']}")
    problems += check_proposals(suite, reference, tests, proposed, lib.module, max_mutants)
    if lib.proposes and not suite["proposals"]["tests"]:
        problems.append(f"no held-out test proposed ({suite['proposals'].get('note')})")
    return {
        "library": f"{lib.dist} {lib.version}",
        "seconds": round(took, 1),
        "naive_credited": suite["naive_credited"],
        "scorewright_credited": suite["scorewright_credited"],
        "mutants": suite["strength"]["mutants"],
        "visible_mutation_score": suite["strength"]["visible_mutation_score"],
        "proposals": [(t["call"], t["kills"]) for t in suite["proposals"]["tests"]],
        "problems": problems,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--only", action="append", help="Only this library (repeatable)")
    parser.add_argument("--mutants", type=int, default=40, help="--mutants of each audit")
    parser.add_argument("-j", "--jobs", type=int, default=2)
    parser.add_argument("--json", help="Write the summary here")
    args = parser.parse_args(argv)
    chosen = [lib for lib in LIBRARIES if not args.only or lib.dist in args.only]
    with tempfile.TemporaryDirectory(prefix="audit-real-") as tmp:
        rows = [audit_one(lib, Path(tmp), args.mutants, args.jobs) for lib in chosen]
    for row in rows:
        verdict = "ok" if not row["problems"] else "; ".join(row["problems"])
        print(f"{row['library']}: {verdict}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 1 if any(row["problems"] for row in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
