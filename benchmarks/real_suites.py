"""Real libraries' own test suites through the evaluator, test for test against plain pytest.

Four pure-Python libraries from their PyPI sdists (pinned below), each scored as a real
project would be: the library's package is the candidate, its own test files the suite
(every third file not imported by another, in sorted order, held out; the last of two), the
pristine package the reference. Candidates are the pristine package, two single-point
mutants (honest bugs) and one mutant that makes some tests hang. Each candidate is also run
by plain pytest (one ``python -m pytest`` process, the candidate first on ``PYTHONPATH``,
pytest-timeout at the same per-test limit) and every test's outcome is compared through
pytest's JUnit XML.

What it checks, per candidate (the exit status is 1 when any fails):

* a result, not a refusal, and ``ok`` (a full measurement);
* per-test outcomes equal to plain pytest's, but for at most ``--tolerance`` tests (1:
  timing-sensitive tests); a test the reference skips or xfails is ``not_applicable``, and
  is compared by what this run did (its message, ``this run: <outcome>``);
* a hang is cut: the hanging tests are ``timeout``, each under its own limits (from the
  reference's time for it), and the run goes on; a run stops only after ``MAX_TIMEOUTS``
  timeouts with no test passed, the tests left ``not_run`` with the reason and not compared
  with plain pytest (which runs them).

Usage::

    .venv/bin/python -m benchmarks.real_suites [--only idna] [--workers 2] [--json out.json]

The sdists are downloaded with pip into ``benchmarks/.cache/real_suites/`` on first use.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.plugin_overhead import junit_category
from benchmarks.sdists import download, junit_key, read_junit
from pytest_scorewright.errors import ScorewrightError
from pytest_scorewright.evaluator import Evaluator
from pytest_scorewright.limits import Limits
from pytest_scorewright.protocol.wire import MAX_TIMEOUTS
from pytest_scorewright.result import ScoreResult, TestRecord

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache" / "real_suites"


class SuiteError(Exception):
    """A one-line reason the check could not run."""


@dataclass(frozen=True)
class Mutant:
    """One exact edit: ``old`` (which must occur once in ``path``) becomes ``new``."""

    name: str
    path: str  # relative to the candidate directory
    old: str
    new: str


@dataclass(frozen=True)
class Library:
    dist: str
    version: str
    #: The sdist's directory holding the library's top-level packages (the candidate).
    source: str
    #: The top-level packages copied from ``source`` (the modules the tests import).
    packages: tuple[str, ...]
    tests: str
    mutants: tuple[Mutant, ...]
    hang: Mutant
    budget_s: float = 60.0
    test_timeout_s: float = 3.0
    #: The reference fails a test of its own suite here: score against it as a baseline.
    baseline: bool = False
    processes: int = 256
    #: Candidates at once, at most (a suite with slow tests shares the cores with fewer).
    workers: int = 2
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def unpacked(self) -> str:
        return f"{self.dist.replace('-', '_')}-{self.version}"


LIBRARIES: tuple[Library, ...] = (
    Library(
        dist="more-itertools",
        version="11.2.1",
        source=".",
        packages=("more_itertools",),
        tests="tests",
        budget_s=180.0,
        # test_primes takes 12 s alone (one test of 9,876 subtests): more than the default,
        # and more than 30 s with two candidates' runs at once on two cores.
        test_timeout_s=30.0,
        workers=1,
        # CallbackIterTests::test_exception waits on a thread with a fixed sleep: on a busy
        # machine the pristine package fails it now and then. Three runs of the reference
        # find it flaky (not applicable), instead of refusing the suite.
        extra={"reference_repeats": 3},
        mutants=(
            Mutant(
                "quantify_off_by_one",
                "more_itertools/recipes.py",
                "    return sum(map(pred, iterable))",
                "    return sum(map(pred, iterable)) + 1",
            ),
            Mutant(
                "tail_one_too_many",
                "more_itertools/recipes.py",
                "        return iter(deque(iterable, maxlen=n))",
                "        return iter(deque(iterable, maxlen=n + 1))",
            ),
        ),
        hang=Mutant(
            "quantify_hangs",
            "more_itertools/recipes.py",
            "    return sum(map(pred, iterable))",
            "    while pred:\n        pass\n    return 0",
        ),
    ),
    Library(
        dist="idna",
        version="3.20",
        source=".",
        packages=("idna",),
        tests="tests",
        # Its Hypothesis tests take 1-2 s each; 3 s cut them with four runs on two cores.
        test_timeout_s=10.0,
        mutants=(
            Mutant(
                "label_length_64",
                "idna/core.py",
                "    return len(label) <= 63",
                "    return len(label) <= 64",
            ),
            Mutant(
                "hyphen_3_4_unchecked",
                "idna/core.py",
                '    if label[2:4] == "--":',
                '    if label[2:4] == "---":',
            ),
        ),
        hang=Mutant(
            "empty_encoder_state_hangs",
            "idna/codec.py",
            "        if not self.buffer and not self._emitted:\n            return 0",
            "        while not self.buffer and not self._emitted:\n            pass",
        ),
    ),
    Library(
        dist="attrs",
        version="26.1.0",
        source="src",
        packages=("attr", "attrs"),
        tests="tests",
        # tests/test_converters.py::TestPipe::test_wrapped_annotation fails with the pristine
        # package on Python 3.11 (plain pytest agrees).
        baseline=True,
        # Its Hypothesis tests take a second or two; 3 s cut them on a busy machine.
        test_timeout_s=10.0,
        mutants=(
            Mutant(
                "max_len_inclusive",
                "attr/validators.py",
                "        if len(value) > self.max_length:",
                "        if len(value) >= self.max_length:",
            ),
            Mutant(
                "is_callable_never_raises",
                "attr/validators.py",
                "        if not callable(value):",
                "        if callable(value) is None:",
            ),
        ),
        hang=Mutant(
            "min_len_hangs",
            "attr/validators.py",
            "        if len(value) < self.min_length:",
            "        while len(value) < self.min_length:\n            pass\n        if False:",
        ),
    ),
    Library(
        dist="cachetools",
        version="8.0.1",
        source="src",
        packages=("cachetools",),
        tests="tests",
        budget_s=120.0,  # the hang mutant hangs 21 tests, 3 s each
        mutants=(
            Mutant(
                "too_large_inclusive",
                "cachetools/__init__.py",
                "            if itemsize > maxsize:",
                "            if itemsize >= maxsize:",
            ),
            Mutant(
                "evict_one_early",
                "cachetools/__init__.py",
                "                while self.__currsize + 1 > maxsize:",
                "                while self.__currsize + 2 > maxsize:",
            ),
        ),
        hang=Mutant(
            "zero_size_hangs",
            "cachetools/__init__.py",
            '            if maxsize < 1:\n                raise ValueError("value too large")\n'
            "            elif key in data:",
            "            while maxsize < 1:\n                pass\n            if key in data:",
        ),
    ),
)


# -- the libraries on disk -------------------------------------------------------------------


def ensure_sdists(libraries: Sequence[Library], cache: Path = CACHE) -> Path:
    """Download and unpack the pinned sdists into ``cache`` unless they are there."""
    missing = [lib for lib in libraries if not (cache / lib.unpacked / lib.tests).is_dir()]
    if not missing:
        return cache
    why = download([f"{lib.dist}=={lib.version}" for lib in missing], cache)
    if why is not None:
        raise SuiteError(why)
    still = [lib.dist for lib in libraries if not (cache / lib.unpacked / lib.tests).is_dir()]
    if still:
        raise SuiteError(f"after download, {', '.join(still)} has no tests in {cache}")
    return cache


@dataclass(frozen=True)
class Layout:
    """One library laid out for scoring: the whole suite, its split, and the candidates."""

    library: Library
    root: Path
    suite: Path  # <root>/plain/tests: every test file, as the library ships them
    visible: Path
    heldout: Path
    candidates: Mapping[str, Path]  # name -> a directory holding the library's packages

    @property
    def reference(self) -> Path:
        return self.candidates["pristine"]


def lay_out(library: Library, cache: Path, work: Path) -> Layout:
    sdist = cache / library.unpacked
    root = work / library.dist
    suite = root / "plain" / "tests"
    shutil.copytree(sdist / library.tests, suite, ignore=shutil.ignore_patterns("__pycache__"))
    visible, heldout = root / "visible" / "tests", root / "heldout" / "tests"
    held = split(suite)
    shutil.copytree(suite, visible, ignore=shutil.ignore_patterns(*held, "__pycache__"))
    # The held-out run gets every file, since a held-out test may import helpers from a
    # visible one (visible tests are no secret), and collects only the held-out files.
    shutil.copytree(suite, heldout, ignore=shutil.ignore_patterns("__pycache__"))
    shown = sorted({p.name for p in suite.glob("test_*.py")} - held)
    with (heldout / "conftest.py").open("a", encoding="utf-8") as conftest:
        conftest.write(
            "\n\n# Added for the held-out run: the visible files are here to be imported.\n"
            f'collect_ignore = list(globals().get("collect_ignore", [])) + {shown!r}\n'
        )
    candidates: dict[str, Path] = {}
    for mutant in (None, *library.mutants, library.hang):
        name = mutant.name if mutant else "pristine"
        home = root / "candidates" / name
        for package in library.packages:
            shutil.copytree(
                sdist / library.source / package,
                home / package,
                ignore=shutil.ignore_patterns("__pycache__"),
            )
        if mutant is not None:
            apply_mutant(home, mutant)
        candidates[name] = home
    return Layout(library, root, suite, visible.parent, heldout.parent, candidates)


def split(suite: Path) -> set[str]:
    """Every third test file (sorted), or the last of two, held out; never a file another
    test file imports (the visible run could not import it)."""
    files = sorted(p.name for p in suite.glob("test_*.py"))
    texts = {name: (suite / name).read_text(encoding="utf-8") for name in files}

    def imported(name: str) -> bool:
        line = re.compile(rf"^\s*(from|import)\s.*\b{re.escape(name[:-3])}\b", re.MULTILINE)
        return any(line.search(text) for other, text in texts.items() if other != name)

    eligible = [name for name in files if not imported(name)]
    return {name for i, name in enumerate(eligible) if i % 3 == 2} or {eligible[-1]}


def apply_mutant(home: Path, mutant: Mutant) -> None:
    path = home / mutant.path
    text = path.read_text(encoding="utf-8")
    if text.count(mutant.old) != 1:
        raise SuiteError(
            f"mutant {mutant.name}: {mutant.old!r} occurs {text.count(mutant.old)} times in "
            f"{mutant.path}, not once; the pinned sdist changed?"
        )
    path.write_text(text.replace(mutant.old, mutant.new), encoding="utf-8")


# -- plain pytest ----------------------------------------------------------------------------


def plain_pytest(layout: Layout, candidate: Path) -> tuple[dict[tuple[str, str], str], str]:
    """Plain pytest's outcome per JUnit testcase, and its summary line."""
    lib = layout.library
    junit = layout.root / f"junit-{candidate.name}.xml"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "SCOREWRIGHT_"))}
    env["PYTHONPATH"] = str(candidate)  # first, as a developer's checkout would be
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    (layout.suite.parent / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    cmd = [
        sys.executable,
        *("-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:scorewright"),
        *("-c", "pytest.ini", "--rootdir", "."),
        *(f"--timeout={lib.test_timeout_s:g}", "--timeout-method=signal"),
        f"--junitxml={junit}",
        "tests",
    ]
    proc = subprocess.run(
        cmd, cwd=layout.suite.parent, env=env, capture_output=True, text=True, timeout=1800
    )
    if proc.returncode not in (0, 1) or not junit.exists():
        tail = " | ".join((proc.stdout + proc.stderr).strip().splitlines()[-3:])
        raise SuiteError(f"plain pytest of {candidate.name} exited {proc.returncode}: {tail}")
    summary = (proc.stdout.strip().splitlines() or ["(no summary)"])[-1]
    try:
        return read_junit(junit), summary
    except ValueError as exc:  # two testcases of one name
        raise SuiteError(str(exc)) from None


# -- the comparison --------------------------------------------------------------------------


def own_outcome(record: TestRecord) -> str:
    """What this run did to a test: for a not_applicable one, from its message."""
    if record.outcome != "not_applicable":
        return record.outcome
    text = record.message or ""
    marker = "; this run: "
    if marker not in text:
        return "not_applicable"
    return text.split(marker, 1)[1].split(":", 1)[0].strip()


def compare(
    result: ScoreResult, junit: Mapping[tuple[str, str], str], *, skip_not_run: bool = False
) -> list[str]:
    problems = []
    seen = set()
    for record in result.tests:
        key = junit_key(record.nodeid)
        seen.add(key)
        if skip_not_run and record.outcome == "not_run":
            continue
        mine = own_outcome(record)
        want = junit_category(mine, record.phase)
        got = junit.get(key, "absent")
        skipped_subtest = bool((record.subtests or {}).get("skipped"))
        if got == want or (want == "passed" and got == "skipped" and skipped_subtest):
            continue
        problems.append(f"{record.nodeid}: scorewright {mine}, plain pytest {got}")
    for key, category in junit.items():
        if key not in seen and key[0]:
            problems.append(f"{'::'.join(key)}: plain pytest {category}, not in the result")
    return problems


@dataclass
class Checked:
    library: str
    candidate: str
    ok: bool
    error: str | None
    outcomes: dict[str, int]
    pass_rate: float | None
    not_applicable: int
    plain: str
    disagreements: list[str]
    score_s: float
    #: The integrity layer's reason codes (honest code, pristine or an honest bug: none).
    flags: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def check_library(
    layout: Layout, workers: int, tolerance: int, *, as_shipped: bool = False
) -> list[Checked]:
    """``as_shipped``: scorewright's own limits (each test's from the reference) and its
    handling of a flaky reference test, not the library's tuned limit and repeats."""
    lib = layout.library
    limits = Limits(
        timeout_s=lib.budget_s,
        test_timeout_s=None if as_shipped else lib.test_timeout_s,
        processes=lib.processes,
    )
    extra = {k: v for k, v in lib.extra.items() if not (as_shipped and k == "reference_repeats")}
    started = time.monotonic()
    with Evaluator(
        layout.visible / "tests",
        heldout=layout.heldout / "tests",
        reference=layout.reference,
        module=list(lib.packages),
        limits=limits,
        reference_baseline=lib.baseline,
        **extra,
    ) as ev:
        built = time.monotonic() - started
        apart = "apart (process)" if ev.isolated else f"in process: {ev.isolation_why}"
        print(f"{lib.dist} {lib.version}: evaluator built in {built:.1f}s; {apart}", flush=True)
        names = list(layout.candidates)
        results: dict[str, tuple[ScoreResult, float]] = {}
        started = time.monotonic()
        at_once = min(workers, lib.workers)
        for index, result in ev.score_many([layout.candidates[n] for n in names], at_once):
            results[names[index]] = (result, time.monotonic() - started)
    checked = []
    for name in names:
        result, at = results[name]
        junit, summary = plain_pytest(layout, layout.candidates[name])
        # By design, a run stops after MAX_TIMEOUTS timeouts with none passed: the tests
        # left say nothing of the candidate, and are not compared.
        stopped = _stopped_after_timeouts(result)
        disagreements = compare(result, junit, skip_not_run=stopped)
        counts = Counter(r.outcome for r in result.tests)
        row = Checked(
            library=f"{lib.dist}-{lib.version}",
            candidate=name,
            ok=result.ok,
            error=result.error,
            outcomes={str(k): v for k, v in counts.items()},
            pass_rate=result.signal("pass_rate"),
            not_applicable=counts.get("not_applicable", 0),
            plain=summary,
            disagreements=disagreements,
            score_s=round(at, 2),
            flags=sorted({r.code for r in result.integrity.reasons}),
        )
        if result.integrity.flagged:
            row.problems.append(f"flagged: {', '.join(row.flags)}")
        if not result.ok:
            row.problems.append(f"not a full measurement: {result.error}")
        if len(disagreements) > tolerance:
            row.problems.append(f"{len(disagreements)} tests disagree with plain pytest")
        if name == lib.hang.name:
            timeouts = [r for r in result.tests if r.outcome == "timeout"]
            after = [r for r in result.tests if r.outcome == "not_run"]
            if not timeouts:
                row.problems.append("the hang mutant hung no test")
            if after and not stopped:
                row.problems.append(f"{len(after)} tests never ran after the hang")
        elif name != "pristine" and result.signal("pass_rate") == 1.0:
            row.problems.append("the mutant passes every test (not a useful mutant)")
        checked.append(row)
        report(row)
    return checked


def _stopped_after_timeouts(result: ScoreResult) -> bool:
    """The run stopped after ``wire.MAX_TIMEOUTS`` tests timed out and none passed (a hung
    candidate costs seconds, the tests left ``not_run`` with the reason)."""
    timeouts = sum(r.outcome == "timeout" for r in result.tests)
    return timeouts >= MAX_TIMEOUTS and any(
        r.outcome == "not_run" and "timed out" in (r.message or "") for r in result.tests
    )


def refused(lib: Library, why: str) -> Checked:
    return Checked(
        library=f"{lib.dist}-{lib.version}",
        candidate="(all)",
        ok=False,
        error=why,
        outcomes={},
        pass_rate=None,
        not_applicable=0,
        plain="",
        disagreements=[],
        score_s=0.0,
        problems=[f"refused: {why}"],
    )


def report(row: Checked) -> None:
    counts = ", ".join(f"{n} {k}" for k, n in sorted(row.outcomes.items(), key=lambda kv: -kv[1]))
    rate = f"{row.pass_rate:.4f}" if row.pass_rate is not None else "-"
    verdict = "OK" if not row.problems else "PROBLEM: " + "; ".join(row.problems)
    print(
        f"  {row.candidate:<26} pass_rate {rate}  [{counts}]  plain: {row.plain}\n"
        f"  {'':<26} agreement: {sum(row.outcomes.values()) - len(row.disagreements)}"
        f"/{sum(row.outcomes.values())} tests; {verdict}",
        flush=True,
    )
    for line in row.disagreements[:5]:
        print(f"  {'':<26}   {line}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--only", action="append", help="a distribution name (repeatable)")
    parser.add_argument("--workers", type=int, default=2, help="candidates at once (2)")
    parser.add_argument("--tolerance", type=int, default=1, help="disagreements allowed (1)")
    parser.add_argument("--json", type=Path, help="write every row here")
    parser.add_argument(
        "--as-shipped",
        action="store_true",
        help="scorewright's default limits (each test's own, from the reference) and flaky "
        "handling, instead of each library's tuned --test-timeout and reference repeats",
    )
    args = parser.parse_args(argv)
    chosen = [lib for lib in LIBRARIES if not args.only or lib.dist in args.only]
    if not chosen:
        print(f"no library named {args.only}; choose from {[x.dist for x in LIBRARIES]}")
        return 2
    try:
        cache = ensure_sdists(chosen)
        rows: list[Checked] = []
        with tempfile.TemporaryDirectory(prefix="scorewright-real-") as tmp:
            for lib in chosen:
                layout = lay_out(lib, cache, Path(tmp))
                try:
                    rows += check_library(
                        layout, args.workers, args.tolerance, as_shipped=args.as_shipped
                    )
                except ScorewrightError as exc:  # refused: the check fails, the others go on
                    print(f"  refused: {exc}", flush=True)
                    rows.append(refused(lib, str(exc)))
    except SuiteError as exc:
        print(f"real_suites: error: {exc}", file=sys.stderr)
        return 2
    bad = [r for r in rows if r.problems]
    print(
        f"{len(rows)} candidates of {len(chosen)} libraries: {len(rows) - len(bad)} as plain "
        f"pytest says, every one scored; {len(bad)} with problems"
    )
    if args.json:
        args.json.write_text(
            json.dumps([r.__dict__ for r in rows], indent=2) + "\n", encoding="utf-8"
        )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
