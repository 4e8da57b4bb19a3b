"""CPU per candidate, every process counted, against one in-process pytest session.

Run from the project root, as root (each side is counted by a cgroup v1 ``cpuacct`` group of
its own, so that the warm parent, the job processes, every run's processes and the kernel's
work for them are all in the figure)::

    python -m benchmarks.cpu_per_candidate [--task DIR] [--rounds R] [--per-round K]
                                           [--before SRC] [--isolation process|in-process]
                                           [--also-workdir DIR]

Side by side, interleaved round by round (the order alternating), in processes started once:

- ``pytest in process``: ``pytest.main`` on the task's suites (visible and held-out) with the
  reference importable, repeated in one warm process: the suite's own cost, the mark to beat;
- ``this tree``: ``Evaluator.score`` of the reference, sandbox and integrity layer on, one
  candidate at a time (``dedupe=False``: every score runs both suites);
- with ``--before SRC`` also the same with another source tree's package (``SRC`` is its
  ``src`` directory: ``git worktree add /tmp/before <commit>`` then ``/tmp/before/src``);
- with ``--also-workdir DIR`` also this tree with its run directories made in ``DIR`` (say a
  tmpfs: ``mount -t tmpfs -o size=2g,mode=1777 tmpfs /mnt/scorewright``) rather than in the
  system temp dir.

Each round scores K times per side; printed: the median over the rounds of the CPU per
candidate of the whole group, the wall time, the ``cpu_s`` signal (the runs' own process
trees), the caller's own CPU, and each side's ratio to the in-process session. A timing
benchmark: run it on a quiet machine and say what else ran. Exit 2 with a one-line reason
where no cpuacct group can be made (not root, or no cgroup v1 cpuacct hierarchy).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_TASK = ROOT / "tests" / "corpus" / "numbers"
CPUACCT = Path("/sys/fs/cgroup/cpuacct")
FIGURES = ("all processes", "wall", "cpu_s signal", "caller")


def _group(name: str) -> Path:
    """A cpuacct group of this process's own (its children join it as they start)."""
    group = CPUACCT / f"scorewright-bench-{name}-{os.getpid()}"
    group.mkdir(exist_ok=True)
    (group / "cgroup.procs").write_text(str(os.getpid()))
    return group


def _used(group: Path) -> float:
    return int((group / "cpuacct.usage").read_text()) / 1e9


def _driver(side: str, task: Path, isolation: str, workdir: str | None) -> None:
    """One side, in its own process: read ``go K`` lines, answer each with the figures."""
    group = _group(side)
    score = _pytest_session(task) if side == "pytest" else _scorer(task, isolation, workdir)
    for _ in range(3):
        score()
    print("ready", flush=True)
    for line in sys.stdin:
        runs = int(line.split()[1])
        used, started, own = _used(group), time.perf_counter(), time.process_time()
        signal = sum(score() for _ in range(runs))
        figures = (
            (_used(group) - used) / runs,
            (time.perf_counter() - started) / runs,
            signal / runs,
            (time.process_time() - own) / runs,
        )
        print(*figures, flush=True)


def _pytest_session(task: Path) -> Callable[[], float]:
    import pytest

    sys.path.insert(0, str(task / "reference"))
    suites = [str(p) for p in (task / "tests", task / "heldout") if p.is_dir()]
    args = ["-q", "-p", "no:cacheprovider", *suites]

    def score() -> float:
        with open(os.devnull, "w") as null, contextlib.redirect_stdout(null):
            pytest.main(args)
        return 0.0

    return score


def _scorer(task: Path, isolation: str, workdir: str | None) -> Callable[[], float]:
    from pytest_scorewright.evaluator import Evaluator

    heldout = task / "heldout"
    evaluator = Evaluator(
        task / "tests",
        reference=task / "reference",
        heldout=heldout if heldout.is_dir() else None,
        dedupe=False,
        isolation=isolation,
        workdir=workdir,
    )
    candidate = next((task / "reference").glob("*.py"))

    def score() -> float:
        result = evaluator.score(candidate)
        if result.integrity.flagged or result.signal("pass_rate") != 1.0:
            raise SystemExit(f"error: the reference scored {result.to_json()}")
        return result.signal("cpu_s") or 0.0

    return score


def _start(
    name: str, source: Path | None, workdir: str | None, args: argparse.Namespace
) -> subprocess.Popen[str]:
    env = dict(os.environ)
    if source is not None:  # first on sys.path, and so on the warm parent's (parent.py)
        env["PYTHONPATH"] = os.pathsep.join([str(source), env.get("PYTHONPATH", "")])
    command = [sys.executable, "-m", "benchmarks.cpu_per_candidate", "--driver", name]
    command += ["--task", str(args.task), "--isolation", args.isolation]
    command += ["--workdir", workdir] if workdir else []
    driver = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT
    )
    if driver.stdout is None or driver.stdout.readline().strip() != "ready":
        raise SystemExit(f"error: the {name!r} side did not start")
    return driver


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", type=Path, default=DEFAULT_TASK)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--per-round", type=int, default=15)
    parser.add_argument("--before", type=Path, help="another source tree's src/ directory")
    parser.add_argument("--isolation", default="process", choices=("process", "in-process"))
    parser.add_argument("--also-workdir", help="a side with run directories made here")
    parser.add_argument("--driver", help=argparse.SUPPRESS)
    parser.add_argument("--workdir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.driver:
        _driver(args.driver, args.task.resolve(), args.isolation, args.workdir)
        return 0
    if not os.access(CPUACCT, os.W_OK):
        print(f"error: {CPUACCT} is not writable here; run as root on a cgroup v1 host")
        return 2
    sides = {"pytest in process": ("pytest", None, None), "this tree": ("tree", ROOT / "src", None)}
    if args.before is not None:
        sides["before"] = ("before", args.before.resolve(), None)
    if args.also_workdir:
        sides[f"work dirs in {args.also_workdir}"] = ("tmpfs", ROOT / "src", args.also_workdir)
    drivers = {label: _start(*side, args) for label, side in sides.items()}
    found: dict[str, list[tuple[float, ...]]] = {label: [] for label in drivers}
    order = list(drivers)
    for round_ in range(args.rounds):
        for label in order if round_ % 2 == 0 else order[::-1]:
            stdin, stdout = drivers[label].stdin, drivers[label].stdout
            assert stdin is not None  # made with pipes
            assert stdout is not None
            stdin.write(f"go {args.per_round}\n")
            stdin.flush()
            found[label].append(tuple(map(float, stdout.readline().split())))
    for driver in drivers.values():
        if driver.stdin is not None:
            driver.stdin.close()
        driver.wait()
    baseline = statistics.median(f[0] for f in found["pytest in process"])
    print(
        f"{args.task.name}, isolation {args.isolation}, {args.rounds} rounds of "
        f"{args.per_round}, medians per candidate (ms):"
    )
    print(f"  {'side':26}" + "".join(f"{name:>15}" for name in FIGURES) + "   / pytest")
    for label, rows in found.items():
        medians = [statistics.median(row[i] for row in rows) for i in range(len(FIGURES))]
        cells = "".join(f"{1000 * m:15.1f}" for m in medians)
        print(f"  {label:26}{cells}   {medians[0] / baseline:6.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
