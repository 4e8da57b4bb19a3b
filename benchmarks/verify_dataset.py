"""``scorewright verify --dataset`` on the real tasks of benchmarks/verify_tasks.py: every kind
of candidate as a predictions file, each verified with gold and empty validation runs, in the
venvs of the bases' requirements (built on the first pass, reused on the second).

    python -m benchmarks.verify_dataset [--validate 2] [--jobs 2] [--kind gold --kind wrong]
        [--first-five] [--validate-all]

The dataset is benchmarks/verify_tasks.py's DATASET: 23 real instances from 8 repositories
(``--first-five``: the five the test suite uses). The gold and empty validation runs are made
in the first pass (``--validate-all``: in every pass).

Prints, per kind, how many instances were resolved; per instance, its seconds; and each
pass's environment figures (built or reused, build seconds, hit rate). Exit 1 when a kind
other than ``gold`` resolves anything, or ``gold`` leaves an instance unresolved.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.verify_tasks import (
    DATASET,
    KINDS,
    TASKS,
    RealTask,
    build,
    instance_line,
    patches,
)


def _dataset(root: Path, tasks: tuple[RealTask, ...]) -> dict[str, Path]:
    repos = root / "repos"
    repos.mkdir()
    lines: list[dict[str, object]] = []
    kinds: dict[str, dict[str, dict[str, str]]] = {}
    for task in tasks:
        built = build(task, repos)
        lines.append(instance_line(built))
        for kind, patch in patches(built).items():
            kinds.setdefault(kind, {})[task.name] = {"model_patch": patch}
    (root / "dataset.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    files = {}
    for kind, found in kinds.items():
        files[kind] = root / f"{kind}.json"
        files[kind].write_text(json.dumps(found))
    return files


def _run(root: Path, predictions: Path, out: Path, jobs: int, validate: int) -> dict[str, Any]:
    command = [sys.executable, "-m", "pytest_scorewright.cli", "verify"]
    command += ["--dataset", str(root / "dataset.jsonl"), "--repos", str(root / "repos")]
    command += ["--predictions", str(predictions), "--out", str(out), "-j", str(jobs)]
    command += ["--validate", str(validate), "--venv-cache", str(root / "venvs")]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    summary: dict[str, Any] = json.loads(done.stdout.split("scorewright: summary ", 1)[1])
    return summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--validate", type=int, default=2)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--kind", action="append", choices=KINDS)
    parser.add_argument(
        "--first-five", action="store_true", help="only the five tasks the test suite uses"
    )
    parser.add_argument(
        "--validate-all",
        action="store_true",
        help="validate in every pass (default: in the first only; the same instances)",
    )
    args = parser.parse_args()
    wrong = 0
    with tempfile.TemporaryDirectory(prefix="verify-dataset-") as tmp:
        root = Path(tmp)
        files = _dataset(root, TASKS if args.first_five else DATASET)
        for number, kind in enumerate(args.kind or sorted(files)):
            out = root / f"{kind}.jsonl"
            validate = args.validate if number == 0 or args.validate_all else 0
            summary = _run(root, files[kind], out, args.jobs, validate)
            lines = [json.loads(text) for text in out.read_text().splitlines()]
            times = ", ".join(f"{e['seconds']:.1f}" for e in lines)
            print(
                f"{kind:>12}: {summary['resolved']}/{summary['instances']} resolved, "
                f"{summary['invalid']} invalid, {summary['error']} error; seconds {times}; "
                f"false-fail {summary['false_fail_rate']}, "
                f"false-pass {summary['false_pass_rate']}; "
                f"environments {summary['environments']} (hit rate "
                f"{summary['environment_hit_rate']}, built in {summary['environment_build_s']} s)"
                + ("  <- first pass" if number == 0 else "")
            )
            for entry in lines:
                if entry["status"] in ("invalid", "error"):
                    environment = (entry.get("environment") or {}).get("key", "")
                    why = str(entry.get("why") or "")[:300]
                    print(f"    {entry['instance_id']}: {entry['status']} ({why}) {environment}")
            expected = summary["instances"] if kind == "gold" else 0
            wrong += summary["resolved"] != expected
    return 1 if wrong else 0


if __name__ == "__main__":
    raise SystemExit(main())
