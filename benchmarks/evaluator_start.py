"""What making an Evaluator costs, the first in a process and each one after.

Run from the project root: ``python -m benchmarks.evaluator_start [--evaluators N] [--rounds R]``.

A caller that makes an Evaluator per task (the reward service, ``verify --dataset``, a test
suite) pays its preparation every time: the host probe, the suites collected, the reference
run, and a warm parent started (a fresh interpreter importing pytest and the sandbox). An
Evaluator that closes idle leaves its warm parent to the next one of the process
(warm/parent.py). This makes ``--evaluators`` Evaluators of the numbers corpus task one after
another, each closed before the next, two ways, interleaved per round: as a caller does
(the warm parent kept), and with ``release_spares()`` after each close (a warm parent started
every time, as before). Prints the median wall time of one Evaluator's preparation and the
CPU of this process and every process it waited for, per Evaluator, less the first of each
batch (its warm parent is started either way).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

from pytest_scorewright.evaluator import Evaluator
from pytest_scorewright.warm.parent import release_spares

TASK = Path(__file__).resolve().parent.parent / "tests" / "corpus" / "numbers"


def _cpu() -> float:
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def batch(evaluators: int, keep: bool) -> tuple[list[float], float]:
    """Wall seconds of each Evaluator after the first, and the CPU of all of them."""
    walls = []
    release_spares()
    first_cpu = 0.0
    for index in range(evaluators):
        before = time.perf_counter()
        with Evaluator(
            TASK / "tests", heldout=TASK / "heldout", reference=TASK / "reference"
        ) as evaluator:
            evaluator.prepare()  # an Evaluator prepares at its first score otherwise
            wall = time.perf_counter() - before
        if not keep:
            release_spares()  # the warm parent ends, and is waited for: its CPU counts here
        if index == 0:
            first_cpu = _cpu()
        else:
            walls.append(wall)
    release_spares()
    return walls, _cpu() - first_cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evaluators", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    figures: dict[str, tuple[list[float], list[float]]] = {"kept": ([], []), "fresh": ([], [])}
    for _ in range(args.rounds):
        for name in ("kept", "fresh"):
            walls, cpu = batch(args.evaluators, keep=name == "kept")
            figures[name][0].extend(walls)
            figures[name][1].append(cpu / (args.evaluators - 1))
    print(f"{args.evaluators} Evaluators of {TASK.name} one after another, {args.rounds} rounds")
    for name, (walls, cpus) in figures.items():
        label = "warm parent kept" if name == "kept" else "warm parent started each time"
        print(
            f"{label:30s} prepare {statistics.median(walls) * 1000:6.0f} ms (median), "
            f"CPU {statistics.median(cpus) * 1000:6.0f} ms per Evaluator"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
