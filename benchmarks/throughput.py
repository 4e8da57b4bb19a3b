"""Throughput of score_many against a fresh `python -m pytest` subprocess per candidate.

Run from the project root::

    python -m benchmarks.throughput [--task DIR] [--candidates N] [--rounds R] [--scaling]
                                    [--as user|user-subids]

Run it as the user you score as. ``--as user`` (from root) runs it as an ordinary user, an
unprivileged uid of its own made by tests/modes.py (the same as the mode tests use), so the
two can be compared in the same hour: the sandbox an ordinary user gets is namespaced too
(a user namespace first), and its per-candidate cost should be within 10% of root's.
``--as user-subids`` runs it as a named user with subordinate ids (tests/modes.py makes it),
whose runs each get a uid of their own (sandbox/subids.py). The
header says which sandbox was measured (``limits.sandbox`` of the first result).

A task is a directory with ``tests/``, ``heldout/`` (optional), ``reference/`` (or
``reference.py``) and ``candidates/*.py`` (the default: tests/corpus/numbers, 12 visible +
11 held-out tests, and its honest candidates). The candidates matching ``--glob`` are cycled
to N. Evaluators score the same candidates, side by side in one run, for R rounds (medians):

- fresh-serial: the evaluator most loops hand-write: copy the candidate next to the tests,
  `python -m pytest -q -p no:cacheprovider tests heldout`, one after another (no sandbox, no
  integrity layer);
- fresh-2: the same, two subprocesses at a time;
- scorewright -j 2: Evaluator.score_many(workers=2), sandbox and integrity layer on;
- with --scaling also scorewright -j 1, and -j 2 through a 2-process executor (each worker
  process with its own Evaluator and warm parent).

Correctness (untimed): each distinct candidate's passing tests by scorewright must be the
passing tests of a fresh pytest run (``-rA``), visible and held-out alike; the script exits 1
on any difference. The same fresh run writes our plugin's ScoreResult, which gives each
candidate's tests' own run time in one plain pytest process, two ways: the tests alone (the
sum of pytest's per-test durations, setup to teardown) and the whole in-process session
(session start to finish: collection, test module and candidate imports, the tests). The
per-candidate cost is compared with both, as means over the timed candidates.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

from pytest_scorewright.evaluator import Evaluator
from pytest_scorewright.limits import Limits
from pytest_scorewright.result import ScoreResult

DEFAULT_TASK = Path(__file__).resolve().parent.parent / "tests" / "corpus" / "numbers"
_SUMMARY_LINE = re.compile(r"^(PASSED|FAILED|ERROR|XPASS|XFAIL) (\S+)")


class Task:
    def __init__(self, root: Path, module: str) -> None:
        self.root, self.module = root, module
        self.tests = root / "tests"
        self.heldout = root / "heldout" if (root / "heldout").is_dir() else None
        ref_dir, ref_file = root / "reference", root / "reference.py"
        self.reference = ref_dir if ref_dir.is_dir() else ref_file if ref_file.is_file() else None
        if not self.tests.is_dir() or not (root / "candidates").is_dir():
            raise SystemExit(f"error: {root} needs tests/ and candidates/; see the docstring")

    def suites(self) -> list[str]:
        return ["tests", "heldout"] if self.heldout else ["tests"]

    def evaluator(self, *, one_cpu: bool = True) -> Evaluator:
        return Evaluator(
            self.tests,
            heldout=self.heldout,
            reference=self.reference,
            module=self.module,
            limits=Limits(one_cpu=one_cpu),
            dedupe=False,  # rounds score the same candidates again
        )


def fresh_one(task: Task, candidate: Path, report: bool = False) -> tuple[str, tuple[float, float]]:
    """A fresh `python -m pytest` on the candidate: its output, and (with ``report``) its
    tests' own time and its in-process session's, from our plugin's result file."""
    with tempfile.TemporaryDirectory(prefix="fresh-") as tmp:
        for suite in task.suites():
            shutil.copytree(task.root / suite, Path(tmp) / suite)
        shutil.copyfile(candidate, Path(tmp) / f"{task.module}.py")
        extra = ["-rA", "--scorewright-out", "own.json"] if report else []
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra]
        done = subprocess.run(
            [*command, *task.suites()],
            cwd=tmp,
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "PYTHONPATH": tmp},
        )
        own = (0.0, 0.0)
        if report:
            result = ScoreResult.from_json((Path(tmp) / "own.json").read_text(encoding="utf-8"))
            tests = sum(t.duration_s or 0.0 for t in result.tests)
            own = (tests, float(result.signal("duration_s") or 0.0))
        return done.stdout, own


def fresh(task: Task, candidates: Sequence[Path], workers: int) -> float:
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(lambda c: fresh_one(task, c)[0], candidates))
    return time.perf_counter() - started


def ours(evaluator: Evaluator, candidates: Sequence[Path], **how: object) -> float:
    started = time.perf_counter()
    results = list(evaluator.score_many(candidates, **how))  # type: ignore[arg-type]
    elapsed = time.perf_counter() - started
    total = len(evaluator.expected_visible) + len(evaluator.expected_heldout)
    if len(results) != len(candidates) or any(r.signal("tests_total") != total for _, r in results):
        raise SystemExit("error: a result is missing or incomplete")
    return elapsed


def _key(nodeid: str) -> str:
    """A test's id without its top directory (the fresh run has heldout/, ours tests/)."""
    return nodeid.split("/", 1)[-1]


def check_correct(
    task: Task, evaluator: Evaluator, candidates: Sequence[Path]
) -> tuple[int, dict[Path, tuple[float, float]]]:
    """How many distinct candidates scorewright got wrong, and each one's own times."""
    wrong, own = 0, {}
    for candidate in sorted(set(candidates)):
        output, own[candidate] = fresh_one(task, candidate, report=True)
        lines = output.splitlines()
        fresh_passed = {
            _key(m.group(2))
            for m in map(_SUMMARY_LINE.match, lines)
            if m and m.group(1) in ("PASSED", "XPASS")
        }
        result = evaluator.score(candidate)
        if len(own) == 1 and result.limits is not None:
            box = result.limits["sandbox"]
            print(
                f"  sandbox: uid {os.getuid()}, processes {box['processes']}"
                f"{' (user namespace)' if box.get('user_namespace') else ''}, "
                f"pytest_config {box['pytest_config']!r}\n  run uid: {box.get('run_uid')}"
            )
        ours_passed = {_key(t.nodeid) for t in result.tests if t.outcome == "passed"}
        flags = [r.code for r in result.integrity.reasons]
        ok = fresh_passed == ours_passed and result.ok
        wrong += not ok
        print(
            f"  {'ok   ' if ok else 'WRONG'} {candidate.name}: {len(ours_passed)}/"
            f"{len(result.tests)} passed (fresh pytest: {len(fresh_passed)})"
            + (f"; flagged {flags}" if flags else "")
            + f"; own time: tests {1000 * own[candidate][0]:.1f} ms, "
            f"session {1000 * own[candidate][1]:.1f} ms"
        )
    return wrong, own


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", type=Path, default=DEFAULT_TASK)
    parser.add_argument("--module", default="solution")
    parser.add_argument("--glob", default="honest_*.py", help="candidates/ files to use")
    parser.add_argument("--candidates", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scaling", action="store_true", help="also -j 1 and an executor")
    parser.add_argument(
        "--spread-too",
        action="store_true",
        help="also -j 2 with runs spread over the CPUs (Limits(one_cpu=False)), side by side",
    )
    parser.add_argument(
        "--as",
        dest="as_mode",
        choices=("user", "user-subids"),
        help="from root: run as an ordinary user (user: an unprivileged uid, no subordinate "
        "ids; user-subids: a named user with a range in /etc/subuid; tests/modes.py)",
    )
    args = parser.parse_args()
    if args.as_mode:
        _reexec_as(args.as_mode)
    task = Task(args.task.resolve(), args.module)
    pool = sorted(p for p in (task.root / "candidates").glob(args.glob) if "slow" not in p.name)
    if not pool:
        raise SystemExit(f"error: no candidates/{args.glob} in {task.root}")
    candidates = [pool[i % len(pool)] for i in range(args.candidates)]
    print(
        f"machine: python {platform.python_version()}, {platform.platform()}, "
        f"{os.cpu_count()} cpus; task {task.root.name}; {len(candidates)} candidates "
        f"({len(pool)} distinct), {args.rounds} rounds"
    )
    executor = (
        ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn"))
        if args.scaling
        else None
    )
    with task.evaluator() as ev:
        print("correctness (untimed): scorewright's passing tests against fresh pytest -rA")
        wrong, own_each = check_correct(task, ev, candidates)
        runs: dict[str, Callable[[], float]] = {
            "fresh-serial": lambda: fresh(task, candidates, 1),
            "fresh-2": lambda: fresh(task, candidates, 2),
            "scorewright -j 2": lambda: ours(ev, candidates, workers=2),
        }
        if args.spread_too:
            spread = task.evaluator(one_cpu=False)
            runs["-j 2, spread"] = lambda: ours(spread, candidates, workers=2)
            ours(spread, candidates[:2], workers=2)
        if executor is not None:
            runs["scorewright -j 1"] = lambda: ours(ev, candidates, workers=1)
            runs["executor, 2 procs"] = lambda: ours(ev, candidates, executor=executor)
            ours(ev, candidates[:4], executor=executor)  # workers build their Evaluators
        ours(ev, candidates[:2], workers=2)  # warm-up: the warm parent's first forks
        timings: dict[str, list[float]] = {name: [] for name in runs}
        for _ in range(args.rounds):
            for name, run in runs.items():
                timings[name].append(run())
    if executor is not None:
        executor.shutdown()
    if args.spread_too:
        spread.close()
    base = statistics.median(timings["fresh-serial"])
    two = statistics.median(timings["fresh-2"])
    print(
        f"\n{'evaluator':18} {'median s':>9} {'per cand. ms':>13} {'cand./s':>8} "
        f"{'vs serial':>10} {'vs fresh-2':>10}"
    )
    for name, values in timings.items():
        median = statistics.median(values)
        per = 1000 * median / len(candidates)
        print(
            f"{name:18} {median:9.2f} {per:13.1f} {len(candidates) / median:8.2f} "
            f"{base / median:9.2f}x {two / median:9.2f}x"
        )
    ours_per = statistics.median(timings["scorewright -j 2"]) / len(candidates)
    print(f"\nscorewright per candidate (-j 2, wall/N): {1000 * ours_per:.1f} ms")
    for i, what in enumerate(("tests alone", "in-process session")):
        mean = statistics.mean(own_each[c][i] for c in candidates)
        print(
            f"  own time, {what} (plain pytest, mean over the timed candidates): "
            f"{1000 * mean:.1f} ms; per candidate = {ours_per / mean:.2f}x of it"
        )
    distinct = len(set(candidates))
    print(f"results: {distinct - wrong}/{distinct} distinct candidates correct")
    return 1 if wrong else 0


def _reexec_as(mode: str) -> None:
    """Run this benchmark again, with the same arguments less ``--as``, as ``mode``."""
    if os.geteuid() != 0:
        raise SystemExit("error: --as needs root (it makes the unprivileged uid); run it as you")
    from tests.modes import session_uid, subid_user

    argv = [a for a in sys.argv[1:] if a != "--as" and a != mode and not a.startswith("--as=")]
    found = subid_user() if mode == "user-subids" else session_uid()
    if isinstance(found, str):
        raise SystemExit(f"error: --as {mode}: {found}")
    uid = str(found)
    home = tempfile.mkdtemp(prefix="sw-bench-")
    os.chown(home, int(uid), -1)
    os.environ["HOME"] = home
    command = [sys.executable, "-m", "benchmarks.throughput", *argv]
    launcher = [sys.executable, "-m", "tests.modes", mode, uid, "--", *command]
    os.execv(sys.executable, launcher)  # noqa: S606 - our interpreter, our modules


if __name__ == "__main__":
    sys.exit(main())
