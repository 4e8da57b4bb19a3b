"""The evaluator's result: judged runs of one candidate in, one ScoreResult out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_scorewright._text import bound_message, excerpt
from pytest_scorewright.integrity.codes import reason
from pytest_scorewright.integrity.memorised import SuiteLiterals, memorised_reasons
from pytest_scorewright.integrity.reasons import Baseline, assess, repeat_reasons
from pytest_scorewright.integrity.relative import TrustedRun
from pytest_scorewright.integrity.static_scan import SourceScan, scan_path
from pytest_scorewright.integrity.verdict import RunVerdict
from pytest_scorewright.limits import Limits
from pytest_scorewright.result import Policy, ScoreResult, Signal
from pytest_scorewright.results.measure import BenchReference, build_result
from pytest_scorewright.results.objectives import ObjectiveSet, take_submissions
from pytest_scorewright.sandbox import guarantees
from pytest_scorewright.sandbox.features import probe
from pytest_scorewright.sandbox.wire import ChildOutcome
from pytest_scorewright.sandbox.workspace import CopyReport

#: One judged run: its suite's name, the parent's verdict, and what the parent observed.
JudgedRun = tuple[str, tuple[RunVerdict, ChildOutcome]]


def assemble(
    candidate: Path,
    runs: Sequence[JudgedRun],
    copied: CopyReport,
    repeat_times: Sequence[float],
    *,
    baseline: Baseline | None,
    policy: Policy,
    limits: Limits,
    network: bool,
    pytest_config: str,
    isolation: tuple[str, str],
    trusted: Mapping[str, TrustedRun] | None = None,
    reference_source: SourceScan | None = None,
    reference_config: Sequence[str] = (),
    literals: SuiteLiterals | None = None,
    reference_failures: int | None = None,
    bench_reference: BenchReference | None = None,
    objectives: ObjectiveSet | None = None,
    submission_counts: Mapping[tuple[str, str, str], int] | None = None,
) -> ScoreResult:
    """The ScoreResult of one candidate: records of every run, integrity reasons from every
    source (relative to what the reference did: ``trusted``, ``reference_source``,
    ``reference_config``, the suite's ``literals``), signals (``speedup`` against the
    reference's ``bench_reference``; ``objectives`` scored from the submissions the
    reference's ``submission_counts`` allow), and what the sandbox was (``limits``).
    ``reference_failures``: with the reference as a baseline, how many tests it fails (not
    applicable to any candidate)."""
    records = [r for _, (verdict, _) in runs for r in verdict.records]
    errors = [f"{name} run: {v.error}" for name, (v, _) in runs if v.error]
    repeat_found, repeat_figures = repeat_reasons(repeat_times)
    # With the candidate in the test process it could send submissions of its own; apart,
    # only the trusted tests can, however many they make.
    submitted, refused, first = take_submissions(
        [(name, v.submissions, v.records) for name, (v, _) in runs],
        submission_counts if isolation[0] == "in-process" else None,
    )
    unexpected = (
        [
            reason(
                "submission_unexpected",
                f"{refused} submitted value(s) beyond the reference's, first {first}: not scored",
            )
        ]
        if refused
        else []
    )
    reasons = assess(
        records,
        [(name, verdict) for name, (verdict, _) in runs],
        config_files=copied.config_files,
        static=scan_path(candidate, reference_source),
        baseline=baseline,
        extra=[
            *repeat_found,
            *unexpected,
            *(memorised_reasons(candidate, literals) if literals is not None else []),
        ],
        trusted=trusted,
        reference_config=reference_config,
    )
    observed = [o for _, (_, o) in runs]
    cpu = [o.cpu_s for o in observed]
    extra_signals = [Signal(k, v, "ratio", False) for k, v in repeat_figures.items()]
    if all(c is not None for c in cpu):
        extra_signals.append(Signal("cpu_s", round(sum(c or 0.0 for c in cpu), 6), "s", False))
    if reference_failures is not None:
        extra_signals.append(Signal("reference_failures", float(reference_failures), "count", None))
    return build_result(
        records,
        mode="evaluator",
        duration_s=sum(o.wall_s for o in observed),
        error="; ".join(errors) or None,
        infrastructure=any(o.stopped is not None for o in observed),
        reasons=reasons,
        limits=limits_record(
            runs, limits, network=network, pytest_config=pytest_config, isolation=isolation
        ),
        counts_known=True,
        extra_signals=extra_signals,
        policy=policy,
        extra={"candidate": str(candidate), "output": excerpt(observed[0].output)},
        bench_reference=bench_reference,
        objectives=(lambda credited: objectives.score(submitted, credited)) if objectives else None,
    )


def _cgroup_record(isolation: Mapping[str, Any]) -> str | None:
    """The run's own cgroup, in one phrase; None where it had none (namespaces, or none
    delegated: ``cgroup_unavailable`` of the features says why)."""
    path = isolation.get("cgroup")
    if not path:
        return None
    bound = "pids.max bounds its processes" if isolation.get("cgroup_pids") else "no pids.max"
    return f"{path} (killed whole at the end; {bound})"


def _run_uid(uid: Any, isolation: Mapping[str, Any]) -> str:
    """Whose uid a run had, in one phrase (docs/sandbox.md, modes)."""
    features = probe()
    if isolation.get("subordinate_ids") and features.subordinate is not None and uid:
        ids = features.subordinate
        host = ids.host_uid(int(uid))
        return f"its own: {uid} in the user namespace, {host} on the host ({ids.describe()})"
    if uid is not None:
        return f"its own: {uid}"
    if features.root and features.root_uids_unavailable:
        return f"root's, every capability dropped ({features.root_uids_unavailable})"
    if isolation.get("user_namespace"):
        why = features.subordinate_unavailable or "not used"
        return f"the caller's, mapped alone in a user namespace (no subordinate ids: {why})"
    return "the caller's"


def limits_record(
    runs: Sequence[JudgedRun],
    limits: Limits,
    *,
    network: bool,
    pytest_config: str,
    isolation: tuple[str, str],
) -> dict[str, Any]:
    """``limits``: the limits asked for, and the sandbox the first run really had."""
    verdict, observed = runs[0][1]
    applied = verdict.sandbox
    mode = observed.isolation.get("mode", "unknown")
    if network:
        net = "allowed (--allow-network)"
    elif mode == "namespaces":
        net = "isolated (network namespace: loopback only)"
    elif applied.get("landlock_tcp"):
        net = "TCP denied by Landlock; UDP and unix sockets not isolated"
    else:
        net = "NOT isolated: no network namespace and no Landlock TCP rules here"
    facts = guarantees.Facts(
        namespaces=mode == "namespaces",
        own_uid=applied.get("uid") is not None,
        nproc_scope=str(applied.get("nproc_scope") or ""),
        landlock_abi=int(applied.get("landlock_abi") or 0),
        network_allowed=network,
        why_not_namespaces=observed.isolation.get("why"),
        cgroup=bool(observed.isolation.get("cgroup")),
        cgroup_pids=bool(observed.isolation.get("cgroup_pids")),
    )
    left = max(
        int(o.isolation.get("left") or o.isolation.get("left_by_supervisor") or 0)
        for _, (_, o) in runs
    )
    return {
        **limits.to_dict(),
        "sandbox": {
            "processes": mode,
            "why_not_namespaces": observed.isolation.get("why"),
            "user_namespace": bool(observed.isolation.get("user_namespace")),
            "uid": applied.get("uid"),
            "run_uid": _run_uid(applied.get("uid"), observed.isolation),
            "nproc_enforced": applied.get("nproc") is not None,
            "nproc_counts": applied.get("nproc_scope"),
            "cgroup": _cgroup_record(observed.isolation),
            "landlock_abi": applied.get("landlock_abi", 0),
            "network": net,
            "pytest_config": pytest_config,
            "isolation": isolation[0],
            "isolation_why": isolation[1],
            **guarantees.record(guarantees.assess(facts)),
            **({"processes_left": left} if left else {}),
        },
    }


def infrastructure_result(
    candidate: Path, error: str, duration_s: float, *, limits: Limits, ours: bool = True
) -> ScoreResult:
    """The result of a candidate that could not be scored for a reason of ours or the
    machine's (``infrastructure``; ``ours=False``: the caller's, say a path that went away):
    nothing measured, so no signal but the time spent."""
    return build_result(
        [],
        mode="evaluator",
        duration_s=duration_s,
        error=bound_message(error, 1000),
        limits=limits.to_dict(),
        counts_known=False,
        infrastructure=ours,
        extra={"candidate": str(candidate)},
    )
