"""``scorewright verify --dataset --venv``: each instance verified in the venv of its base
commit's requirements, one venv per distinct requirement set, built once, kept under the
cache by content (verify/environment.py's key) and reused by every later instance and run.

The instances of one environment are verified by one process running under that venv's
interpreter (``scorewright verify --dataset`` on their subset); its lines come back here
with the environment's key, whether it was reused, and what building it took. Runs in the
caller's process; the verdicts themselves are verify/dataset.py's, in the child.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_scorewright.errors import ConfigError
from pytest_scorewright.sandbox.workspace import private_tempdir
from pytest_scorewright.verify.checkout import export_base
from pytest_scorewright.verify.dataset import Instance, Line, find_repo
from pytest_scorewright.verify.environment import (
    INSIDE,
    Environment,
    base_requirements,
    ensure_venv,
)


def requirements_of(instance: Instance, repos: Path | None, extras: Sequence[str]) -> list[str]:
    """The base commit's requirements (read from its files, as ``verify --venv`` reads them)."""
    with private_tempdir("scorewright-base-") as tmp:
        base = Path(tmp) / "base"
        export_base(find_repo(instance, repos).resolve(), instance.base_commit, base)
        return base_requirements(base, [*extras, *instance.extras])


def run_in_environments(
    instances: Sequence[Instance],
    predictions: Mapping[str, str],
    out: Path,
    *,
    repos: Path | None,
    extras: Sequence[str],
    cache: Path,
    child_args: Sequence[str],
    on_line: Callable[[dict[str, Any]], None],
) -> list[dict[str, Any]]:
    """Group ``instances`` by environment, build or reuse each, verify each group in it;
    every line appended to ``out`` with its ``environment``. Returns what was written."""
    groups: dict[tuple[str, ...], list[Instance]] = {}
    written: list[dict[str, Any]] = []
    for instance in instances:
        try:
            key = tuple(sorted(set(requirements_of(instance, repos, extras))))
        except ConfigError as exc:
            written.append(_append(out, Line(instance.instance_id, "error", why=str(exc))))
            on_line(written[-1])
            continue
        groups.setdefault(key, []).append(instance)
    for requirements, members in groups.items():
        started = time.monotonic()
        try:
            env = ensure_venv(list(requirements), cache)
        except ConfigError as exc:
            for instance in members:
                line = Line(instance.instance_id, "error", why=f"its environment: {exc}")
                written.append(_append(out, line))
                on_line(written[-1])
            continue
        facts = {
            "key": env.key,
            "reused": env.reused,
            "build_s": round(time.monotonic() - started, 3),
            "requirements": list(requirements),
        }
        for entry in _verify_in(env, members, predictions, repos, child_args, on_line):
            written.append(_append(out, {**entry, "environment": facts}))
    return written


def _verify_in(
    env: Environment,
    members: Sequence[Instance],
    predictions: Mapping[str, str],
    repos: Path | None,
    child_args: Sequence[str],
    on_line: Callable[[dict[str, Any]], None],
) -> list[dict[str, Any]]:
    """The lines of ``members`` verified by a ``verify --dataset`` process under ``env``."""
    with private_tempdir("scorewright-dataset-env-") as tmp:
        subset, preds, lines = Path(tmp) / "dataset.json", Path(tmp) / "preds.json", Path(tmp) / "o"
        subset.write_text(json.dumps([m.to_line() for m in members]), encoding="utf-8")
        chosen = {
            m.instance_id: predictions[m.instance_id]
            for m in members
            if m.instance_id in predictions
        }
        preds.write_text(json.dumps({k: {"model_patch": v} for k, v in chosen.items()}))
        command = [str(env.python), "-I", "-m", "pytest_scorewright.cli", "verify"]
        command += ["--dataset", str(subset), "--predictions", str(preds), "--out", str(lines)]
        command += [*(["--repos", str(repos)] if repos else []), *child_args]
        # The child's progress lines go straight to our stderr, as it writes them.
        done = subprocess.run(  # noqa: S603 (the task's venv, our own command)
            command,
            env={**os.environ, INSIDE: str(env.python)},
            stdout=subprocess.DEVNULL,
            check=False,
        )
        found = {}
        if lines.exists():
            for text in lines.read_text(encoding="utf-8").splitlines():
                entry = json.loads(text)
                found[str(entry["instance_id"])] = entry
        for instance in members:
            if instance.instance_id not in found:
                why = f"its environment's run ended with exit status {done.returncode} first"
                found[instance.instance_id] = Line(instance.instance_id, "error", why=why).to_dict()
                on_line(found[instance.instance_id])
        return [found[m.instance_id] for m in members]


def _append(out: Path, entry: Line | dict[str, Any]) -> dict[str, Any]:
    found = entry.to_dict() if isinstance(entry, Line) else entry
    with out.open("a", encoding="utf-8") as sink:
        sink.write(json.dumps(found) + "\n")
    return found


def environment_summary(entries: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Environments used, how many were reused from the cache, and what building cost."""
    seen: dict[str, Mapping[str, Any]] = {}
    for entry in entries:
        facts = entry.get("environment")
        if isinstance(facts, Mapping) and isinstance(facts.get("key"), str):
            seen[facts["key"]] = facts
    reused = sum(bool(f.get("reused")) for f in seen.values())
    return {
        "environments": len(seen),
        "environments_reused": reused,
        "environment_hit_rate": round(reused / len(seen), 4) if seen else None,
        "environment_build_s": round(
            sum(float(f.get("build_s") or 0) for f in seen.values() if not f.get("reused")), 3
        ),
    }
