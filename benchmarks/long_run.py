"""Long runs: memory, file descriptors, temp dirs and processes over many candidates.

Run from the project root: ``python -m benchmarks.long_run [--candidates 1000] [--jobs 2]``.

Scores the honest candidates of tests/corpus/numbers (visible and held-out runs each) with
``score_many`` and prints, at checkpoints, the caller's and the warm parent's resident memory
and open descriptors, the ``scorewright-*`` directories left in the temp dir, and processes
still running as a sandbox uid. Flat lines are the point.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from pytest_scorewright.evaluator import Evaluator

TASK = Path(__file__).resolve().parent.parent / "tests" / "corpus" / "numbers"


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def leftover_dirs() -> int:
    return sum(
        1 for p in Path(tempfile.gettempdir()).iterdir() if p.name.startswith("scorewright-")
    )


def sandbox_processes() -> int:
    count = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                status = Path(f"/proc/{entry}/status").read_text()
            except OSError:
                continue
            uid = next((ln.split()[1] for ln in status.splitlines() if ln[:4] == "Uid:"), "0")
            count += int(uid) >= 1_000_000
    return count


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    honest = sorted(p for p in (TASK / "candidates").glob("honest_*.py") if "slow" not in p.name)
    candidates = [honest[i % len(honest)] for i in range(args.candidates)]
    checkpoints = {0, *(args.candidates * k // 4 for k in range(1, 5))}
    me = os.getpid()
    dirs_before = leftover_dirs()
    print(
        f"{'done':>6} {'seconds':>8} {'caller MB':>10} {'warm MB':>8} {'caller fds':>11} "
        f"{'warm fds':>9} {'temp dirs':>10} {'sandbox procs':>14}"
    )
    with Evaluator(
        TASK / "tests", heldout=TASK / "heldout", reference=TASK / "reference", dedupe=False
    ) as ev:
        assert ev._runner.warm is not None
        warm = ev._runner.warm._proc.pid
        started = time.monotonic()

        def report(done: int) -> None:
            print(
                f"{done:6d} {time.monotonic() - started:8.1f} {rss_mb(me):10.1f} "
                f"{rss_mb(warm):8.1f} {open_fds(me):11d} {open_fds(warm):9d} "
                f"{leftover_dirs() - dirs_before:10d} {sandbox_processes():14d}",
                flush=True,
            )

        report(0)
        for done, _ in enumerate(ev.score_many(candidates, workers=args.jobs), start=1):
            if done in checkpoints:
                report(done)
    # The Evaluator's own fixed mount point (scorewright-fixed-*) lives as long as it does.
    print(
        f"after close: {leftover_dirs() - dirs_before} scorewright-* temp dirs, "
        f"{sandbox_processes()} sandbox processes, warm parent "
        f"{'gone' if not Path(f'/proc/{warm}').exists() else 'STILL RUNNING'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
