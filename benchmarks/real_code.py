"""False positives of the integrity layer on real code: honest candidates must not be flagged.

Three real pure-Python libraries from their pinned PyPI sdists, chosen for what honest code
does that gaming code also does: cachetools (keeps ``time.monotonic`` as a default argument
and an attribute), boltons (gc walks, ctypes, frames and tracebacks, sockets, exec of
generated code, timers) and bottle (a web framework in one module: sockets, threads,
templates compiled at run time, frames). For each library:

- the suite is the library's own test files, a third of them (every third file, sorted)
  held out, the rest visible; helper modules and data files go with both;
- the reference is the pristine package; the candidates are the pristine package again and
  a few single-point mutants (one line changed: honest bugs, and one refactoring that
  changes which gc walk runs but not the answer);
- every candidate is scored by ``scorewright score CANDIDATE --tests T --heldout H
  --reference R --module M`` (a subprocess, as a user would run it), and run by plain pytest
  on the same files (``--junitxml``) for a test-for-test comparison.

The goal: no candidate flagged (no reason of severity gaming or tamper: hints are listed, not
counted), the mutants' failures found, and every test's outcome the same as plain pytest's.
Exit status 0 when all holds, 1 when not, 2 when a library could not be fetched.

Usage::

    .venv/bin/python -m benchmarks.real_code [--library cachetools] [--json out.json]

The sdists are downloaded with pip into ``benchmarks/.cache/`` on first use
(benchmarks/sdists.py); the tasks are built under ``benchmarks/.cache/real_code``.
This is a correctness benchmark: its timings are for information only.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.sdists import download, junit_key, read_junit
from pytest_scorewright.result import ScoreResult

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache"
TASKS = CACHE / "real_code"
#: The whole candidate (visible and held-out runs), in seconds: boltons' suite starts local
#: servers; a loaded machine is slow.
TIMEOUT_S = 180


class FetchError(Exception):
    """A library could not be downloaded or unpacked, or its suite not compared."""


@dataclass(frozen=True)
class Mutant:
    """One honest bug: ``old`` (found exactly once in ``file``) replaced by ``new``."""

    name: str
    file: str
    old: str
    new: str


@dataclass(frozen=True)
class Library:
    dist: str
    version: str
    #: The module name the tests import.
    module: str
    #: The package directory or module file inside the unpacked sdist.
    package: str
    #: The test directory inside the unpacked sdist.
    tests: str
    #: What the honest code does that gaming code also does (for the report).
    uses: str
    mutants: tuple[Mutant, ...]
    #: Files of the test directory that are not taken, each with why.
    leave_out: tuple[tuple[str, str], ...] = ()

    @property
    def sdist_dir(self) -> str:
        return f"{self.dist}-{self.version}"


LIBRARIES: tuple[Library, ...] = (
    Library(
        dist="cachetools",
        version="5.5.2",
        module="cachetools",
        package="src/cachetools",
        tests="tests",
        uses="time.monotonic kept as a default argument and attribute; random.choice likewise",
        mutants=(
            Mutant(
                "size_limit_off_by_one",
                "cachetools/__init__.py",
                "while self.__currsize + size > maxsize:",
                "while self.__currsize + size >= maxsize:",
            ),
            Mutant(
                "ttl_expires_late",
                "cachetools/__init__.py",
                "while curr is not root and not (time < curr.expires):",
                "while curr is not root and not (time <= curr.expires):",
            ),
            Mutant(
                "hashkey_ignores_kwargs",
                "cachetools/keys.py",
                "return _HashedTuple(args + sum(sorted(kwargs.items()), _kwmark))",
                "return _HashedTuple(args)",
            ),
        ),
    ),
    Library(
        dist="boltons",
        version="25.0.0",
        module="boltons",
        package="boltons",
        tests="tests",
        uses=(
            "gc walks (gcutils), ctypes, frames and tracebacks (tbutils, funcutils), "
            "sockets (socketutils), exec of generated code, timers"
        ),
        leave_out=(
            (
                "conftest.py",
                "its pytest_ignore_collect(path) uses the argument pytest 9 removed; it only "
                "skips *_py2 files, of which there are none",
            ),
        ),
        mutants=(
            Mutant(
                "int_ranges_miss_their_end",
                "boltons/strutils.py",
                "output += list(range(min(range_limits), max(range_limits)+1))",
                "output += list(range(min(range_limits), max(range_limits)))",
            ),
            Mutant(
                # Not a bug: a different gc walk, with the same answer (a refactoring).
                "gc_walks_every_object",
                "boltons/gcutils.py",
                "        to_check = gc.get_referrers(type_obj)\n",
                "        to_check = gc.get_objects()\n",
            ),
            Mutant(
                "traceback_line_off_by_one",
                "boltons/tbutils.py",
                "        lineno = tb.tb_lineno\n",
                "        lineno = tb.tb_lineno + 1\n",
            ),
        ),
    ),
    Library(
        dist="bottle",
        version="0.13.2",
        module="bottle",
        package="bottle.py",
        tests="test",
        uses="sockets and threads (servers), templates compiled at run time, frames, time",
        leave_out=(
            (
                "test_config.py",
                "test_load_module imports 'test.example_settings': it needs the suite's "
                "directory to be named test/, and every run copies a suite to tests/",
            ),
        ),
        mutants=(
            Mutant(
                "html_escape_keeps_ampersands",
                "bottle.py",
                "return string.replace('&', '&amp;').replace('<', '&lt;')",
                "return string.replace('<', '&lt;')",
            ),
            Mutant(
                "range_end_exclusive",
                "bottle.py",
                "start, end = int(start), min(int(end) + 1, maxlen)",
                "start, end = int(start), min(int(end), maxlen)",
            ),
            Mutant(
                "basic_auth_ignored",
                "bottle.py",
                "if method.lower() == 'basic':",
                "if method.lower() == 'digest':",
            ),
        ),
    ),
)


# -- building the tasks ------------------------------------------------------------------


def fetch(library: Library, cache: Path = CACHE) -> Path:
    """The unpacked sdist, downloaded with pip on first use."""
    unpacked = cache / library.sdist_dir
    if (unpacked / library.tests).is_dir():
        return unpacked
    spec = f"{library.dist}=={library.version}"
    why = download([spec], cache)
    if why is not None:
        raise FetchError(why)
    if not (unpacked / library.tests).is_dir():
        raise FetchError(f"{spec} has no {library.tests}/ after unpacking; delete {unpacked}")
    return unpacked


@dataclass(frozen=True)
class Task:
    library: Library
    root: Path

    @property
    def tests(self) -> Path:
        return self.root / "tests"

    @property
    def heldout(self) -> Path:
        return self.root / "heldout"

    @property
    def reference(self) -> Path:
        return self.root / "reference"

    def candidates(self) -> list[Path]:
        return sorted(p for p in (self.root / "candidates").iterdir() if p.is_dir())


def build_task(library: Library, unpacked: Path, tasks: Path = TASKS) -> Task:
    """Lay out tests/, heldout/, reference/ and candidates/ (pristine and mutants)."""
    root = tasks / library.sdist_dir
    if root.exists():
        shutil.rmtree(root)
    test_dir = unpacked / library.tests
    skipped = {name for name, _ in library.leave_out}
    files = sorted(
        p
        for p in test_dir.iterdir()
        if p.is_file() and p.name.startswith("test_") and p.suffix == ".py"
    )
    heldout = set(files[2::3])
    for suite, wanted in (("tests", set(files) - heldout), ("heldout", heldout)):
        dest = root / suite
        dest.mkdir(parents=True)
        for entry in test_dir.iterdir():
            if entry.name in skipped or entry.name == "__pycache__":
                continue
            if entry in set(files) and entry not in wanted:
                continue
            if entry.is_dir():
                shutil.copytree(entry, dest / entry.name)
            else:
                shutil.copy2(entry, dest / entry.name)
    source = unpacked / library.package
    _copy_package(source, root / "reference")
    _copy_package(source, root / "candidates" / "pristine")
    for mutant in library.mutants:
        target = root / "candidates" / f"mutant_{mutant.name}"
        _copy_package(source, target)
        path = target / mutant.file
        text = path.read_text(encoding="utf-8")
        if text.count(mutant.old) != 1:
            raise FetchError(f"mutant {mutant.name}: {mutant.old!r} is not in {mutant.file} once")
        path.write_text(text.replace(mutant.old, mutant.new), encoding="utf-8")
    return Task(library, root)


def _copy_package(source: Path, dest: Path) -> None:
    dest.mkdir(parents=True)
    if source.is_dir():
        shutil.copytree(source, dest / source.name, ignore=shutil.ignore_patterns("__pycache__"))
    else:
        shutil.copy2(source, dest / source.name)


# -- scoring and comparing ----------------------------------------------------------------


@dataclass
class Scored:
    candidate: str
    result: ScoreResult
    plain: dict[str, str] = field(default_factory=dict)
    disagreements: list[str] = field(default_factory=list)

    @property
    def flagged(self) -> bool:
        return self.result.integrity.flagged

    @property
    def isolation(self) -> str:
        """How the candidate ran (limits.sandbox.isolation), and why, when not apart."""
        sandbox = (self.result.limits or {}).get("sandbox", {})
        found = str(sandbox.get("isolation", "?"))
        if found != "process":
            found += f" ({sandbox.get('isolation_why', '')})"
        return found

    def counts(self, heldout: bool) -> tuple[int, int]:
        tests = [t for t in self.result.tests if t.heldout == heldout]
        return sum(t.outcome == "passed" for t in tests), len(tests)


def score(task: Task, candidate: Path, out: Path) -> ScoreResult:
    """``scorewright score`` in a subprocess, as a user runs it."""
    cmd = [
        sys.executable,
        "-m",
        "pytest_scorewright.cli",
        "score",
        str(candidate),
        "--tests",
        str(task.tests),
        "--heldout",
        str(task.heldout),
        "--reference",
        str(task.reference),
        "--module",
        task.library.module,
        "--timeout",
        str(TIMEOUT_S),
        "--out",
        str(out),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"scorewright score {candidate.name} failed: {proc.stderr.strip()}")
    return ScoreResult.read(out)


def plain_outcomes(suite: Path, candidate: Path, work: Path) -> dict[tuple[str, str], str]:
    """Plain pytest on the suite as the user laid it out (<root>/tests, <root>/heldout: the
    ids scorewright reports), the candidate on the path: each JUnit testcase's outcome."""
    root = Path(tempfile.mkdtemp(dir=work))
    shutil.copytree(suite, root / suite.name)
    (root / "pytest.ini").write_text("[pytest]\n")
    junit = root / "junit.xml"
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:scorewright"]
    cmd += ["-c", str(root / "pytest.ini"), "--rootdir", str(root), "--confcutdir", str(root)]
    cmd += ["--junitxml", str(junit), str(root / suite.name)]
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "PYTHONPATH": str(candidate)}
    env |= {"HOME": str(root), "TMPDIR": str(root), "LANG": "C.UTF-8"}
    subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, check=False)
    try:
        return read_junit(junit)
    except ValueError as exc:  # two testcases of one name
        raise FetchError(f"{suite}: {exc}") from None
    finally:
        shutil.rmtree(root, ignore_errors=True)


_AS_PLAIN = {"xfailed": "skipped", "xpassed": "passed", "timeout": "failed"}


def compare(scored: Scored, plain: dict[tuple[str, str], str]) -> None:
    for record in scored.result.tests:
        theirs = plain.get(junit_key(record.nodeid), "missing")
        ours = _AS_PLAIN.get(record.outcome, record.outcome)
        scored.plain[record.nodeid] = theirs
        if ours != theirs:
            scored.disagreements.append(f"{record.nodeid}: scorewright {ours}, pytest {theirs}")


def run_library(library: Library, work: Path) -> list[Scored]:
    task = build_task(library, fetch(library))
    scored = []
    for candidate in task.candidates():
        result = score(task, candidate, work / f"{library.dist}-{candidate.name}.json")
        one = Scored(candidate.name, result)
        plain = plain_outcomes(task.tests, candidate, work)
        plain |= plain_outcomes(task.heldout, candidate, work)
        compare(one, plain)
        scored.append(one)
    return scored


def report(library: Library, scored: Sequence[Scored]) -> list[str]:
    lines = [f"{library.dist} {library.version} ({library.uses}):"]
    for one in scored:
        v_pass, v_total = one.counts(heldout=False)
        h_pass, h_total = one.counts(heldout=True)
        reasons = one.result.integrity.reasons
        strong = [r.code for r in reasons if r.severity != "hint"]
        hints = sorted({r.code for r in reasons if r.severity == "hint"})
        agree = len(one.result.tests) - len(one.disagreements)
        lines.append(
            f"  {one.candidate:32} visible {v_pass:4}/{v_total:<4} held-out {h_pass:4}/"
            f"{h_total:<4} {'FLAGGED ' + ','.join(strong) if strong else 'not flagged'}"
            f"{' (hints: ' + ', '.join(hints) + ')' if hints else ''}; agrees with pytest "
            f"{agree}/{len(one.result.tests)}"
            + ("" if one.result.ok else f"; not ok: {one.result.error}")
        )
        lines += [f"      {d}" for d in one.disagreements[:5]]
    lines.append(f"  isolation: {scored[0].isolation}" if scored else "  isolation: -")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--library", action="append", choices=[lib.dist for lib in LIBRARIES])
    parser.add_argument("--json", metavar="FILE", help="Write the figures here too")
    args = parser.parse_args(argv)
    chosen = [lib for lib in LIBRARIES if not args.library or lib.dist in args.library]
    everything: dict[str, list[Scored]] = {}
    with tempfile.TemporaryDirectory(prefix="scorewright-real-code-") as tmp:
        for library in chosen:
            try:
                everything[library.dist] = run_library(library, Path(tmp))
            except FetchError as exc:
                print(f"real_code: error: {exc}", file=sys.stderr)
                return 2
            print("\n".join(report(library, everything[library.dist])), flush=True)
    scored = [one for ones in everything.values() for one in ones]
    flagged = sum(one.flagged for one in scored)
    tests = sum(len(one.result.tests) for one in scored)
    agree = tests - sum(len(one.disagreements) for one in scored)
    print()
    print(f"candidates flagged (gaming or tamper): {flagged}/{len(scored)}")
    print(f"tests agreeing with plain pytest:      {agree}/{tests}")
    if args.json:
        Path(args.json).write_text(json.dumps(_figures(everything), indent=2) + "\n")
    return 0 if flagged == 0 and agree == tests else 1


def _figures(everything: dict[str, list[Scored]]) -> dict[str, Any]:
    return {
        dist: [
            {
                "candidate": one.candidate,
                "visible": one.counts(heldout=False),
                "heldout": one.counts(heldout=True),
                "flagged": one.flagged,
                "isolation": one.isolation,
                "reasons": [
                    {"code": r.code, "severity": r.severity, "detail": r.detail}
                    for r in one.result.integrity.reasons
                ],
                "disagreements": one.disagreements,
            }
            for one in ones
        ]
        for dist, ones in everything.items()
    }


if __name__ == "__main__":
    sys.exit(main())
