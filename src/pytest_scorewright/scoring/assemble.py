"""The evaluator's result: judged runs of one candidate in, one ScoreResult out."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_scorewright._text import bound_message, excerpt
from pytest_scorewright.errors import ConfigError, InfrastructureError
from pytest_scorewright.integrity.codes import reason
from pytest_scorewright.integrity.memorised import memorised_reasons
from pytest_scorewright.integrity.reasons import assess, repeat_reasons
from pytest_scorewright.integrity.static_scan import scan_path
from pytest_scorewright.integrity.verdict import RunVerdict
from pytest_scorewright.limits import Limits
from pytest_scorewright.protocol.wire import ChildOutcome
from pytest_scorewright.result import Policy, Reason, ScoreResult, Signal, TestRecord
from pytest_scorewright.results.candidate_coverage import figures
from pytest_scorewright.results.measure import build_result
from pytest_scorewright.sandbox import guarantees
from pytest_scorewright.sandbox.host import probe
from pytest_scorewright.sandbox.workspace import CopyReport
from pytest_scorewright.scoring.objectives import ObjectiveSet, take_submissions
from pytest_scorewright.scoring.reference import Reference

#: One judged run: its suite's name, the parent's verdict, and what the parent observed.
JudgedRun = tuple[str, tuple[RunVerdict, ChildOutcome]]

#: Evidence that the clocks cannot be trusted for this candidate, and nothing more.
#: work_off_the_clock is seen per test, where the helper got the CPU between rounds; a busy
#: machine hides it in some tests (CI once credited 1.99 from the test where it hid), so
#: one test's evidence voids the candidate's speed.
UNTIMED = frozenset(
    {"import_time_work", "timing_mismatch", "cross_run_speedup", "work_off_the_clock"}
)


def assemble(
    candidate: Path,
    runs: Sequence[JudgedRun],
    copied: CopyReport,
    repeat_times: Sequence[float],
    *,
    reference: Reference,
    policy: Policy,
    limits: Limits,
    network: bool,
    pytest_config: str,
    reference_failures: int | None = None,
    objectives: ObjectiveSet | None = None,
    covered_files: Mapping[str, Path] | None = None,
) -> ScoreResult:
    """The ScoreResult of one candidate: records of every run, integrity reasons from every
    source (relative to what the ``reference`` did: its runs, its source, its configuration
    files, the suite's literals), signals (``speedup`` against the reference's benchmarks;
    ``objectives`` scored from the submissions the reference's allow), and what the sandbox
    was (``limits``). ``reference_failures``: with the reference as a baseline, how many
    tests it fails (not applicable to any candidate). ``covered_files``: with coverage, the
    candidate's files by the path its runs saw them at (``line_coverage`` of them)."""
    isolation = ("process" if reference.isolated else "in-process", reference.isolation_why)
    present = reference.present
    records = [r for _, (verdict, _) in runs for r in verdict.records]
    errors = [f"{name} run: {v.error}" for name, (v, _) in runs if v.error]
    repeat_found, repeat_figures = repeat_reasons(repeat_times)
    # With the candidate in the test process it could send submissions of its own; apart,
    # only the trusted tests can, however many they make.
    submitted, refused, first = take_submissions(
        [(name, v.submissions, v.records) for name, (v, _) in runs],
        reference.submission_counts if present and not reference.isolated else None,
    )
    extra = [*repeat_found]
    if refused:
        extra.append(
            reason(
                "submission_unexpected",
                f"{refused} submitted value(s) beyond the reference's, first {first}: not scored",
            )
        )
    reasons = _reasons(candidate, runs, records, copied, reference, extra)
    # Work at import time is how a table of answers would dodge the benchmarks' clock, and
    # how an honest program loads pandas; pytest's durations far below the parent's clock
    # are how patched timers look, and how a loaded machine looks between 200 quick tests
    # (an honest library was rejected for it, in CI-like load); a first run far slower than
    # its repeats is a cache that survived, or a load spike: their speed is not credited,
    # their answers are.
    timed = present and all(r.code not in UNTIMED for r in reasons)
    observed = [o for _, (_, o) in runs]
    cpu = [o.cpu_s for o in observed]
    extra_signals = [Signal(k, v, "ratio", False) for k, v in repeat_figures.items()]
    if all(c is not None for c in cpu):
        extra_signals.append(Signal("cpu_s", round(sum(c or 0.0 for c in cpu), 6), "s", False))
    if reference_failures is not None:
        extra_signals.append(Signal("reference_failures", float(reference_failures), "count", None))
    claims = [v.coverage for _, (v, _) in runs if v.coverage is not None]
    return build_result(
        records,
        mode="evaluator",
        duration_s=sum(o.wall_s for o in observed),
        coverage=figures(covered_files, claims) if covered_files is not None and claims else None,
        error="; ".join(errors) or None,
        collection_errors=[c for _, (v, _) in runs for c in v.collection_errors],
        infrastructure=any(o.stopped is not None for o in observed),
        reasons=reasons,
        limits=limits_record(
            runs, limits, network=network, pytest_config=pytest_config, isolation=isolation
        ),
        counts_known=True,
        extra_signals=extra_signals,
        policy=policy,
        extra={"candidate": str(candidate), "output": excerpt(observed[0].output)},
        bench_reference=reference.bench if timed else None,
        bench_warm=reference.bench_warm,
        objectives=(lambda credited: objectives.score(submitted, credited)) if objectives else None,
    )


def _reasons(
    candidate: Path,
    runs: Sequence[JudgedRun],
    records: list[TestRecord],
    copied: CopyReport,
    reference: Reference,
    extra: list[Reason],
) -> list[Reason]:
    """Integrity reasons from every source, relative to what the reference did."""
    if reference.literals is not None:
        extra = [*extra, *memorised_reasons(candidate, reference.literals)]
    return assess(
        records,
        [(name, verdict) for name, (verdict, _) in runs],
        config_files=copied.config_files,
        static=scan_path(candidate, reference.source),
        baseline=reference.baseline,
        extra=extra,
        trusted=reference.trusted if reference.present else None,
        reference_config=reference.config,
    )


def _cgroup_record(isolation: Mapping[str, Any]) -> str | None:
    """The run's own cgroup, in one phrase; None where it had none (namespaces, or none
    delegated)."""
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
    elif mode == "gvisor":
        net = "isolated (gVisor with no network; a network namespace of its own: loopback only)"
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
        gvisor=mode == "gvisor",
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
            **({"candidate_sees_tests": SEES_TESTS} if _apart_in_gvisor(mode, isolation) else {}),
            **guarantees.record(guarantees.assess(facts)),
            **({"processes_left": left} if left else {}),
        },
    }


#: What a candidate apart can read in gVisor that it cannot under the namespace backend.
SEES_TESTS = (
    "its own run's copies of the tests: this gVisor has no mount namespace of a process's "
    "own and no Landlock to hide them (a read is evidence: reads_tests)"
)


def _apart_in_gvisor(mode: str, isolation: tuple[str, str]) -> bool:
    return mode == "gvisor" and isolation[0] == "process"


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


def unscored_result(path: Path, exc: BaseException, *, limits: Limits) -> ScoreResult:
    """The result of a candidate of a batch that raised instead of being scored."""
    if isinstance(exc, ConfigError):  # the path went away meanwhile: the caller's
        return infrastructure_result(path, str(exc), 0.0, limits=limits, ours=False)
    error = str(exc) if isinstance(exc, InfrastructureError) else f"{type(exc).__name__}: {exc}"
    return infrastructure_result(path, f"could not be scored: {error}", 0.0, limits=limits)


def ours(path: Path, exc: BaseException, wall_s: float, *, limits: Limits) -> ScoreResult:
    """The result of a candidate whose scoring failed for a reason of ours or the machine's
    (an :class:`InfrastructureError` says which; anything else is a bug to report)."""
    error = (
        str(exc)
        if isinstance(exc, InfrastructureError)
        else f"scorewright failed ({type(exc).__name__}: {exc}); please report it"
    )
    return infrastructure_result(path, error, wall_s, limits=limits)


def timed(result: ScoreResult, wall_s: float) -> ScoreResult:
    """``duration_s`` as the call's wall time: the visible and held-out runs go at once, so
    the sum of their times is no time anybody waited."""
    signals = tuple(
        dataclasses.replace(s, value=round(wall_s, 6)) if s.name == "duration_s" else s
        for s in result.signals
    )
    return dataclasses.replace(result, signals=signals)
