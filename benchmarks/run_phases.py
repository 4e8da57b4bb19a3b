"""Where the time of one sandboxed run goes, from the trusted parent's own timestamps.

Run from the project root::

    python -m benchmarks.run_phases [--task DIR] [--candidate FILE] [--runs N]

One visible run of the task's suite (default: tests/corpus/numbers, its reference as the
candidate), N times one after another, nothing else running. The job process stamps each of
the child's messages on arrival; the phases are the gaps between them:

- start → sandbox ready: forks, namespaces, mounts, rlimits, Landlock, uid drop;
- ready → collected: pytest up to the end of collection (test module and candidate imports);
- collected → last report: the tests;
- last report → child gone: the finish message, exits, PID 1 reaped;
- hand-over: from the caller's request to the outcome, less the job's own wall time (the
  warm parent's request and answer, the job's fork);
- caller: the rest of ``score()`` (work dir, verdict, integrity checks, result).

It also prints the CPU time of the run's process tree (PID 1 and the worker, from wait4).
Medians over the runs; the first two runs are dropped as warm-up.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from pytest_scorewright.evaluator import Evaluator

DEFAULT_TASK = Path(__file__).resolve().parent.parent / "tests" / "corpus" / "numbers"


def phases(evaluator: Evaluator, candidate: Path) -> dict[str, float]:
    (visible,) = evaluator._dirs.runs(
        evaluator.expected_visible, None, None, evaluator.reference.messages
    )
    run = evaluator._runner.launch(
        candidate, visible, (), evaluator.limits.timeout_s, evaluator.isolated
    )
    launched = time.perf_counter()
    outcome = run.wait()
    observed = time.perf_counter() - launched
    arrivals = {message.get("type"): at for at, message in outcome.messages}
    reports = [at for at, message in outcome.messages if message.get("type") == "report"]
    ready, collected = arrivals.get("sandbox", 0.0), arrivals.get("collected", 0.0)
    last = max(reports, default=collected)
    before = time.perf_counter()
    evaluator.score(candidate)
    whole = time.perf_counter() - before
    return {
        "start → sandbox ready": ready,
        "ready → collected": collected - ready,
        "collected → last report": last - collected,
        "last report → child gone": outcome.wall_s - last,
        "hand-over (warm parent, job fork)": observed - outcome.wall_s,
        # score() is the same launch and wait, plus the verdict and the result.
        "caller (work dir, verdict, result)": whole - observed,
        "run's process tree CPU": outcome.cpu_s or 0.0,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", type=Path, default=DEFAULT_TASK)
    parser.add_argument("--candidate", type=Path, help="default: the task's reference")
    parser.add_argument("--runs", type=int, default=25)
    parser.add_argument(
        "--isolation",
        default="auto",
        choices=("auto", "process", "in-process"),
        help="auto (the default: by process for this suite), process or in-process",
    )
    args = parser.parse_args()
    tests, reference = args.task / "tests", args.task / "reference"
    if not tests.is_dir() or not reference.exists():
        raise SystemExit(f"error: {args.task} needs tests/ and reference/; see the docstring")
    candidate = args.candidate or next(reference.glob("*.py"))
    with Evaluator(tests, reference=reference, dedupe=False, isolation=args.isolation) as ev:
        samples = [phases(ev, candidate) for _ in range(args.runs + 2)][2:]
    print(
        f"one visible run of {tests} ({candidate.name}, isolation {args.isolation}), "
        f"median of {args.runs}:"
    )
    for name in samples[0]:
        value = statistics.median(s[name] for s in samples)
        print(f"  {name:38} {1000 * value:7.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
