"""Throughput as the jobs grow: score_many at J = 1, 2, 4, ... up to the cores, against a
fresh `python -m pytest` per candidate run J at a time (what loops hand-write), side by side.

Run from the project root, on a quiet machine (nothing else running)::

    python -m benchmarks.scaling [--task DIR] [--candidates N] [--jobs 1,2,4,8,16]

For each J, each row gives candidates per second both ways, their ratio, our efficiency
against our own J=1 (cand/s at J, over J times cand/s at 1), where the pipelines were
(``score_many`` spreads more than four jobs over processes of their own:
fanout/pipelines.py), and the CPU each candidate cost, by process kind: the caller, the
pipeline processes, the warm parents, and the runs (the job processes and their sandboxes,
counted when their warm parent reaps them), read from /proc before and after the batch; then
the peak resident memory of the trusted processes (caller, pipelines, warm parents) per
candidate at once. A last line sums it up. The default task is tests/corpus/numbers (12
visible + 11 held-out tests) with its honest candidates, each made distinct so that no
result comes from the cache.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from benchmarks.throughput import DEFAULT_TASK, Task, fresh
from pytest_scorewright.evaluator import Evaluator
from pytest_scorewright.sandbox.placement import available_cores

_TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> tuple[float, float]:
    """A process's own CPU seconds, and its reaped children's."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    own = (int(fields[11]) + int(fields[12])) / _TICK
    reaped = (int(fields[13]) + int(fields[14])) / _TICK
    return own, reaped


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(c) for c in (task / "children").read_text().split()]
    return found


def _peak_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def _kinds(evaluator: Evaluator) -> dict[str, list[int]]:
    """The trusted processes of ``evaluator`` by kind."""
    warm = evaluator._runner.warm
    current = evaluator._pipelines.current
    pipelines = [p.proc.pid for p in current._all] if current else []
    warms = [w for p in pipelines for w in _children(p)]
    return {
        "caller": [os.getpid()],
        "pipelines": pipelines,
        "warm": ([warm._proc.pid] if warm is not None else []) + warms,
    }


def _cpu(kinds: dict[str, list[int]]) -> dict[str, float]:
    cpu = {"caller": 0.0, "pipelines": 0.0, "warm": 0.0, "runs": 0.0}
    for kind, pids in kinds.items():
        for pid in pids:
            own, reaped = _stat(pid)
            cpu[kind] += own
            if kind == "warm":
                cpu["runs"] += reaped
    return cpu


def _distinct(task: Task, count: int, into: Path) -> list[Path]:
    honest = sorted((task.root / "candidates").glob("honest_*.py"))
    made = []
    for i in range(count):
        path = into / f"c{i}.py"
        path.write_text(honest[i % len(honest)].read_text() + f"\n# distinct {i}\n")
        made.append(path)
    return made


def _row(task: Task, jobs: int, candidates: Sequence[Path]) -> dict[str, float | str]:
    with task.evaluator() as evaluator:
        evaluator.prepare()
        list(evaluator.score_many(candidates[: 2 * jobs], jobs))  # warm: pipelines started
        kinds = _kinds(evaluator)
        before = _cpu(kinds)
        started = time.perf_counter()
        results = list(evaluator.score_many(candidates, jobs))
        ours_s = time.perf_counter() - started
        after = _cpu(kinds)
        peak = sum(_peak_kib(p) for pids in kinds.values() for p in pids)
        sizes = evaluator._pipelines.current.sizes if evaluator._pipelines.current else []
    if len(results) != len(candidates) or any(r.infrastructure for _, r in results):
        raise SystemExit("error: a result is missing or not scored")
    fresh_s = fresh(task, candidates, jobs)
    n = len(candidates)
    row: dict[str, float | str] = {
        "jobs": jobs,
        "ours": n / ours_s,
        "fresh": n / fresh_s,
        "pipelines": "+".join(map(str, sizes)) or "-",
        "peak_mib_per_job": peak / 1024 / jobs,
    }
    for kind in before:
        row[f"cpu_{kind}_ms"] = 1000 * (after[kind] - before[kind]) / n
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", type=Path, default=DEFAULT_TASK)
    parser.add_argument("--module", default="solution")
    parser.add_argument("--candidates", type=int, default=0, help="default: 12 per job, >= 48")
    parser.add_argument("--jobs", default="", help="comma-separated J (default: 1, 2, 4, ...)")
    args = parser.parse_args()
    cores, why = available_cores()
    if args.jobs:
        levels = [int(j) for j in args.jobs.split(",")]
    else:
        levels = [1 << k for k in range(cores.bit_length()) if 1 << k <= cores]
        levels += [cores] if levels[-1] != cores else []
    task = Task(args.task, args.module)
    count = args.candidates or max(48, 12 * max(levels))
    print(f"# {platform.node()}: {cores} cores ({why}), Python {platform.python_version()}")
    print(f"# task {task.root}, {count} distinct candidates per row")
    print(
        "| J | fresh cand/s | ours cand/s | ratio | eff. vs J=1 | pipelines "
        "| CPU ms/cand caller / pipelines / warm / runs | peak MiB per job |"
    )
    print("|---|---|---|---|---|---|---|---|")
    rows = []
    with tempfile.TemporaryDirectory(prefix="scaling-") as tmp:
        candidates = _distinct(task, count, Path(tmp))
        for jobs in levels:
            row = _row(task, jobs, candidates)
            rows.append(row)
            base = float(rows[0]["ours"]) * (int(row["jobs"]) / int(rows[0]["jobs"]))
            cpu = " / ".join(
                f"{float(row[f'cpu_{k}_ms']):.1f}" for k in ("caller", "pipelines", "warm", "runs")
            )
            print(
                f"| {jobs} | {float(row['fresh']):.1f} | {float(row['ours']):.1f} "
                f"| {float(row['ours']) / float(row['fresh']):.1f}x "
                f"| {float(row['ours']) / base:.2f} | {row['pipelines']} | {cpu} "
                f"| {float(row['peak_mib_per_job']):.0f} |",
                flush=True,
            )
    top, one = rows[-1], rows[0]
    print(
        f"summary: J={top['jobs']} gives {float(top['ours']) / float(one['ours']):.1f}x our "
        f"J={one['jobs']} and {float(top['ours']) / float(top['fresh']):.1f}x a fresh pytest "
        f"at the same J, on {cores} cores"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
