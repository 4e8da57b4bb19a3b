"""``scorewright verify --dataset``: many repository tasks in SWE-bench's instance format, each
verified in the sandbox with the parent deciding, several at once, one JSON line per instance.

An instance (one JSON object a line, or a JSON list of them)::

    {"instance_id": "semver-1", "repo": "python-semver/python-semver", "base_commit": "3f2c1e0",
     "patch": "<gold diff>", "test_patch": "<test diff>",
     "FAIL_TO_PASS": "[\"tests/test_x.py::test_fix\"]", "PASS_TO_PASS": "[...]"}

``FAIL_TO_PASS``/``PASS_TO_PASS`` as SWE-bench writes them (a JSON list in a string) or as a
list. Optional: ``tests_dir``, ``modules``, ``repo_path`` (the git repository itself). Each
repository is a git clone holding the base commit, found under ``--repos DIR`` as
``owner__name`` (SWE-bench's naming), ``owner/name`` or ``name``; the runs see the base
commit's files only (``git archive``: no history to read the fix from) and no network.

Predictions as SWE-bench's harness reads them: ``{"instance_id", "model_patch", ...}`` a
line, a JSON list, or a JSON object keyed by instance id; ``--predictions gold`` verifies
every instance's own ``patch`` (the dataset's self-check).

**Confidence** (``--validate K``): before the prediction, the gold patch and the empty patch
are verified K times each on the same prepared task. An instance whose empty patch resolves
is ``invalid`` (it scores 1.0 with no change); one whose gold patch never resolves is
``invalid`` too; a listed test whose outcome differs across the gold runs is
``quarantined``: listed in the line and not counted for the prediction. The summary
estimates the verdict's false-pass rate (empty patches resolved) and false-fail rate (gold
patches not resolved) over the runs made.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_scorewright.errors import ConfigError
from pytest_scorewright.limits import Limits
from pytest_scorewright.sandbox.workspace import private_tempdir
from pytest_scorewright.verify.task import RepoTask
from pytest_scorewright.verify.task_verdict import Verdict
from pytest_scorewright.verify.verifier import InvalidTask, Verifier

#: The verdicts a dataset line can carry.
STATUSES = ("resolved", "unresolved", "invalid", "error")


@dataclass(frozen=True)
class Instance:
    """One task of a dataset, as its line gave it (trusted: the dataset author's)."""

    instance_id: str
    repo: str
    base_commit: str
    gold: str
    test_patch: str
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]
    tests_dir: str | None = None
    modules: tuple[str, ...] = ()
    repo_path: str | None = None
    #: Extras or dependency groups of the base this instance's environment takes too (its
    #: tests' own: attrs' ``tests-no-zope``), beside ``--extra``'s for every instance.
    extras: tuple[str, ...] = ()

    @classmethod
    def of(cls, line: Mapping[str, Any], where: str) -> Instance:
        def text(key: str, default: str | None = None) -> str:
            value = line.get(key, default)
            if not isinstance(value, str) or (default is None and not value):
                raise ConfigError(f"{where}: {key!r} is missing or not a string")
            return value

        return cls(
            instance_id=text("instance_id"),
            repo=text("repo", ""),
            base_commit=text("base_commit"),
            gold=text("patch", ""),
            test_patch=text("test_patch", ""),
            fail_to_pass=_ids(line.get("FAIL_TO_PASS"), f"{where}: FAIL_TO_PASS"),
            pass_to_pass=_ids(line.get("PASS_TO_PASS", "[]"), f"{where}: PASS_TO_PASS"),
            tests_dir=line.get("tests_dir") if isinstance(line.get("tests_dir"), str) else None,
            modules=tuple(m for m in line.get("modules") or () if isinstance(m, str)),
            repo_path=line.get("repo_path") if isinstance(line.get("repo_path"), str) else None,
            extras=tuple(e for e in line.get("extras") or () if isinstance(e, str)),
        )

    def to_line(self) -> dict[str, Any]:
        """The instance as a dataset line again (for a subset handed to another process)."""
        line: dict[str, Any] = {
            "instance_id": self.instance_id,
            "repo": self.repo,
            "base_commit": self.base_commit,
            "patch": self.gold,
            "test_patch": self.test_patch,
            "FAIL_TO_PASS": list(self.fail_to_pass),
            "PASS_TO_PASS": list(self.pass_to_pass),
            "modules": list(self.modules),
            "extras": list(self.extras),
        }
        if self.tests_dir is not None:
            line["tests_dir"] = self.tests_dir
        if self.repo_path is not None:
            line["repo_path"] = self.repo_path
        return line


def _ids(value: Any, what: str) -> tuple[str, ...]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{what} is not a JSON list of test ids ({exc.msg})") from None
    if not isinstance(value, list) or not all(isinstance(i, str) for i in value):
        raise ConfigError(f"{what} is not a list of test ids")
    return tuple(value)


def read_objects(path: Path, what: str) -> list[dict[str, Any]]:
    """JSON Lines, a JSON list, or (predictions) a JSON object keyed by instance id."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{what} {os.fspath(path)!r} cannot be read ({exc.strerror})") from None
    stripped = text.lstrip()
    try:
        if stripped.startswith("["):
            loaded = json.loads(text)
        elif stripped.startswith("{") and "\n{" not in stripped.rstrip():
            one = json.loads(text)
            keyed = all(isinstance(v, dict) for v in one.values()) and "instance_id" not in one
            loaded = [{"instance_id": k, **v} for k, v in one.items()] if keyed else [one]
        else:
            loaded = [json.loads(line) for line in text.splitlines() if line.strip()]
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{what} {os.fspath(path)!r} is not JSON or JSON Lines ({exc.msg})"
        ) from None
    if not isinstance(loaded, list) or not all(isinstance(item, dict) for item in loaded):
        raise ConfigError(f"{what} {os.fspath(path)!r}: every entry must be a JSON object")
    return [dict(item) for item in loaded]


def read_dataset(path: Path) -> list[Instance]:
    instances = [
        Instance.of(line, f"{os.fspath(path)} entry {n}")
        for n, line in enumerate(read_objects(path, "--dataset"), 1)
    ]
    seen: set[str] = set()
    for instance in instances:
        if instance.instance_id in seen:
            raise ConfigError(f"--dataset: instance {instance.instance_id!r} is listed twice")
        seen.add(instance.instance_id)
    if not instances:
        raise ConfigError(f"--dataset {os.fspath(path)!r} holds no instance")
    return instances


def read_predictions(path: str, instances: Sequence[Instance]) -> dict[str, str]:
    """instance id -> the candidate's patch (``gold``: each instance's own)."""
    if path == "gold":
        return {i.instance_id: i.gold for i in instances}
    found: dict[str, str] = {}
    for n, entry in enumerate(read_objects(Path(path), "--predictions"), 1):
        key, patch = entry.get("instance_id"), entry.get("model_patch", "")
        if not isinstance(key, str) or not isinstance(patch, str | type(None)):
            raise ConfigError(
                f"--predictions entry {n}: needs a string instance_id and model_patch"
            )
        found[key] = patch or ""
    return found


def find_repo(instance: Instance, repos: Path | None) -> Path:
    """The instance's git repository (``repo_path``, or under ``repos``)."""
    if instance.repo_path:
        return Path(instance.repo_path)
    if repos is None:
        raise ConfigError(
            f"instance {instance.instance_id!r} names no repo_path; give --repos DIR holding "
            "a clone of each repository"
        )
    owner, _, name = instance.repo.partition("/")
    for candidate in (f"{owner}__{name}", instance.repo, name or owner):
        if candidate and (repos / candidate / ".git").exists():
            return repos / candidate
    raise ConfigError(
        f"instance {instance.instance_id!r}: no git clone of {instance.repo!r} under "
        f"{os.fspath(repos)!r} (looked for {owner}__{name}, {instance.repo}, {name or owner})"
    )


@dataclass
class Line:
    """One instance's verdict, as the JSON line says it."""

    instance_id: str
    status: str
    why: str | None = None
    resolved: bool = False
    fail_to_pass: dict[str, list[str]] = field(default_factory=dict)
    pass_to_pass: dict[str, list[str]] = field(default_factory=dict)
    quarantined: list[str] = field(default_factory=list)
    gold_resolved: list[bool] = field(default_factory=list)
    empty_resolved: list[bool] = field(default_factory=list)
    integrity: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "instance_id": self.instance_id,
            "status": self.status,
            "resolved": self.resolved,
            "why": self.why,
            "FAIL_TO_PASS": self.fail_to_pass,
            "PASS_TO_PASS": self.pass_to_pass,
            "quarantined": self.quarantined,
            "gold_resolved": self.gold_resolved,
            "empty_resolved": self.empty_resolved,
            "integrity": self.integrity,
            "seconds": round(self.seconds, 3),
        }


def verify_instance(
    instance: Instance,
    patch: str | None,
    repos: Path | None,
    *,
    validate: int = 0,
    timeout_s: float = 60.0,
) -> Line:
    """Verify one instance (and, with ``validate``, its gold and empty patches first); a
    task that cannot be verified is an ``error`` line with the reason, never an exception."""
    started = time.monotonic()
    try:
        with private_tempdir("scorewright-dataset-") as tmp:
            task = _task(instance, repos, Path(tmp))
            gold = instance.gold.encode() if instance.gold else None
            with Verifier(task, gold=gold, limits=Limits(timeout_s=timeout_s)) as verifier:
                line = _judged(instance, verifier, patch, validate)
    except InvalidTask as exc:
        line = Line(instance.instance_id, "invalid", why=str(exc))
    except ConfigError as exc:
        line = Line(instance.instance_id, "error", why=str(exc))
    line.seconds = time.monotonic() - started
    return line


def _task(instance: Instance, repos: Path | None, tmp: Path) -> RepoTask:
    test_patch = None
    if instance.test_patch:
        test_patch = tmp / "test.diff"
        test_patch.write_text(instance.test_patch, encoding="utf-8")
    return RepoTask.of(
        find_repo(instance, repos),
        instance.base_commit,
        fail_to_pass=instance.fail_to_pass,
        pass_to_pass=instance.pass_to_pass,
        test_patch=test_patch,
        tests_dir=instance.tests_dir,
        modules=instance.modules,
        instance_id=instance.instance_id,
    )


def _judged(instance: Instance, verifier: Verifier, patch: str | None, validate: int) -> Line:
    gold = [verifier.verify(patch=instance.gold.encode()) for _ in range(validate)]
    empty = [verifier.verify(patch=b"") for _ in range(validate)]
    # Flipping across the gold runs, or flaky in the base's own runs (Verifier.quarantined).
    quarantined = sorted({*_flipping(gold), *verifier.quarantined})
    line = Line(
        instance.instance_id,
        "unresolved",
        quarantined=quarantined,
        gold_resolved=[v.resolved for v in gold],
        empty_resolved=[v.resolved for v in empty],
    )
    if any(line.empty_resolved):
        line.status, line.why = "invalid", "the empty patch resolves it: it scores with no change"
        return line
    if gold and not any(_resolved(v, quarantined) for v in gold):
        line.status = "invalid"
        line.why = f"the gold patch never resolves it: {gold[0].why}"
        return line
    if patch is None:
        line.status, line.why = "unresolved", "no prediction for this instance"
        return line
    verdict = verifier.verify(patch=patch.encode())
    line.quarantined = sorted({*quarantined, *verifier.quarantined})  # prepared by now
    line.resolved = _resolved(verdict, quarantined)
    line.status = "resolved" if line.resolved else "unresolved"
    line.why = None if line.resolved else verdict.why
    line.fail_to_pass = dict(verdict.fail_to_pass)
    line.pass_to_pass = dict(verdict.pass_to_pass)
    if verdict.result is not None:
        line.integrity = sorted({r.code for r in verdict.result.integrity.reasons})
    return line


def _flipping(gold: Sequence[Verdict]) -> list[str]:
    """Listed tests whose outcome was not the same in every gold run."""
    if len(gold) < 2:
        return []
    seen: dict[str, set[str]] = {}
    for verdict in gold:
        for test, outcome in verdict.outcomes.items():
            seen.setdefault(test, set()).add(outcome)
    return sorted(test for test, outcomes in seen.items() if len(outcomes) > 1)


def _resolved(verdict: Verdict, quarantined: Sequence[str]) -> bool:
    """Resolved with the quarantined tests not counted (a run that failed for any other
    reason, or was rejected, stays unresolved)."""
    if verdict.resolved or not quarantined or not verdict.applied or verdict.result is None:
        return verdict.resolved
    if not verdict.result.ok or verdict.result.integrity.rejected:
        return False
    passed = {*verdict.fail_to_pass.get("success", ()), *verdict.pass_to_pass.get("success", ())}
    counted = [t for t in verdict.outcomes if t not in quarantined]
    return bool(counted) and all(t in passed for t in counted)


def done_ids(out: Path) -> set[str]:
    """Instances already written to ``out`` (``--resume``): each complete line's id."""
    found: set[str] = set()
    if not out.exists():
        return found
    for text in out.read_text(encoding="utf-8").splitlines():
        try:
            entry = json.loads(text)
        except json.JSONDecodeError:
            continue  # a line cut by a kill: verified again
        if isinstance(entry, dict) and entry.get("status") in STATUSES:
            found.add(str(entry.get("instance_id")))
    return found


def pending(instances: Sequence[Instance], out: Path, *, resume: bool) -> list[Instance]:
    """The instances still to verify: with ``resume`` those ``out`` has no line for; else
    all of them, ``out`` emptied."""
    if not resume:
        out.unlink(missing_ok=True)
        return list(instances)
    skip = done_ids(out)
    return [i for i in instances if i.instance_id not in skip]


def run_dataset(
    todo: Sequence[Instance],
    predictions: Mapping[str, str],
    out: Path,
    *,
    repos: Path | None = None,
    jobs: int = 1,
    validate: int = 0,
    timeout_s: float = 60.0,
    on_line: Callable[[Line], None] | None = None,
) -> list[Line]:
    """Verify ``todo`` (:func:`pending`), ``jobs`` at once, each line appended to ``out`` as
    it is decided (a killed run keeps what it finished)."""
    if jobs < 1:
        raise ConfigError(f"--jobs {jobs} must be at least 1")
    lock = threading.Lock()
    lines: list[Line] = []

    def one(instance: Instance) -> Line:
        line = verify_instance(
            instance,
            predictions.get(instance.instance_id),
            repos,
            validate=validate,
            timeout_s=timeout_s,
        )
        with lock, out.open("a", encoding="utf-8") as sink:
            sink.write(json.dumps(line.to_dict()) + "\n")
            sink.flush()
            lines.append(line)
        if on_line is not None:
            on_line(line)
        return line

    with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="scorewright-dataset") as pool:
        for _ in pool.map(one, todo):
            pass
    return lines


def summary(lines: Iterator[dict[str, Any]] | Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Counts by status, and the verdict's error estimates from the validation runs."""
    entries = list(lines)
    counts = {status: sum(e.get("status") == status for e in entries) for status in STATUSES}
    gold = [bool(r) for e in entries for r in e.get("gold_resolved") or ()]
    empty = [bool(r) for e in entries for r in e.get("empty_resolved") or ()]
    return {
        "instances": len(entries),
        **counts,
        "quarantined_tests": sum(len(e.get("quarantined") or ()) for e in entries),
        "gold_runs": len(gold),
        "false_fail_rate": round(1 - sum(gold) / len(gold), 4) if gold else None,
        "empty_runs": len(empty),
        "false_pass_rate": round(sum(empty) / len(empty), 4) if empty else None,
        "seconds": round(sum(float(e.get("seconds") or 0) for e in entries), 3),
    }
