"""What the gVisor backend costs (``Evaluator(sandbox="gvisor")``), beside the namespace
backend, on the quickstart task.

    python -m benchmarks.gvisor_cost [--candidates 12] [--rounds 2]

For each backend, in turn within each round (so both see the same machine): the cold start
(an Evaluator prepared: for gVisor, its sandbox started, the suite collected and the
reference run inside it), then ``--candidates`` distinct candidates scored one at a time
(warm: the sandbox already up). Prints, per backend, the cold start, the median wall time per
candidate and the machine's CPU time per candidate (all processes, from /proc/stat), and the
gVisor/namespaces ratios. Needs root and runsc.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from pytest_scorewright.evaluator import Evaluator

QUICKSTART = Path(__file__).resolve().parents[1] / "examples" / "quickstart"


def _cpu_seconds() -> float:
    """Every CPU's busy time so far (user, nice, system, irq, softirq, steal), in seconds."""
    with open("/proc/stat") as stat:
        fields = [int(x) for x in stat.readline().split()[1:]]
    busy = fields[0] + fields[1] + fields[2] + fields[5] + fields[6] + fields[7]
    return busy / os.sysconf("SC_CLK_TCK")


def _measure(backend: str, candidates: list[Path]) -> tuple[float, list[float], float]:
    started = time.monotonic()
    with Evaluator(
        QUICKSTART / "tests",
        heldout=QUICKSTART / "heldout",
        reference=QUICKSTART / "reference",
        sandbox=backend,
        dedupe=False,
    ) as evaluator:
        evaluator.prepare()
        cold = time.monotonic() - started
        walls = []
        cpu_before = _cpu_seconds()
        for candidate in candidates:
            began = time.monotonic()
            result = evaluator.score(candidate)
            walls.append(time.monotonic() - began)
            assert result.signal("pass_rate") is not None, result.error
        cpu = (_cpu_seconds() - cpu_before) / len(candidates)
    return cold, walls, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    source = (QUICKSTART / "solution.py").read_text(encoding="utf-8")
    figures: dict[str, list[tuple[float, list[float], float]]] = {"namespaces": [], "gvisor": []}
    with tempfile.TemporaryDirectory(prefix="gvisor-cost-") as tmp:
        for round_number in range(args.rounds):
            for backend in figures:
                candidates = []
                for index in range(args.candidates):
                    path = Path(tmp) / f"{backend}-{round_number}-{index}" / "solution.py"
                    path.parent.mkdir()
                    path.write_text(f"{source}\n# {backend} {round_number} {index}\n")
                    candidates.append(path)
                figures[backend].append(_measure(backend, candidates))
    summary = {}
    for backend, runs in figures.items():
        cold = statistics.median(c for c, _, _ in runs)
        wall = statistics.median(w for _, walls, _ in runs for w in walls)
        cpu = statistics.median(c for _, _, c in runs)
        summary[backend] = (cold, wall, cpu)
        print(
            f"{backend:>10}: cold start {cold:.2f} s; per candidate (warm) median wall "
            f"{wall * 1e3:.0f} ms, CPU {cpu * 1e3:.0f} ms (all processes)"
        )
    (gc, gw, gu), (nc, nw, nu) = summary["gvisor"], summary["namespaces"]
    print(f"gvisor/namespaces: cold {gc / nc:.2f}x, wall {gw / nw:.2f}x, CPU {gu / nu:.2f}x")
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
