"""The evaluator's result: judged runs of one candidate in, one ScoreResult out."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_scorewright._text import excerpt
from pytest_scorewright.integrity.reasons import Baseline, assess, repeat_reasons
from pytest_scorewright.integrity.static_scan import scan_path
from pytest_scorewright.integrity.verdict import RunVerdict
from pytest_scorewright.limits import Limits
from pytest_scorewright.result import ScoreResult, Signal
from pytest_scorewright.results.measure import build_result
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
    fail_closed: bool,
    limits: Limits,
    network: bool,
    pytest_config: str,
    reference_failures: int | None = None,
) -> ScoreResult:
    """The ScoreResult of one candidate: records of every run, integrity reasons from every
    source, signals, and what the sandbox was (``limits``). ``reference_failures``: with the
    reference as a baseline, how many tests it fails (not applicable to any candidate)."""
    records = [r for _, (verdict, _) in runs for r in verdict.records]
    errors = [f"{name} run: {v.error}" for name, (v, _) in runs if v.error]
    repeat_found, repeat_figures = repeat_reasons(repeat_times)
    reasons = assess(
        records,
        [(name, verdict) for name, (verdict, _) in runs],
        config_files=copied.config_files,
        static=scan_path(candidate),
        baseline=baseline,
        extra=repeat_found,
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
        reasons=reasons,
        limits=limits_record(runs, limits, network=network, pytest_config=pytest_config),
        counts_known=True,
        extra_signals=extra_signals,
        fail_closed=fail_closed,
        extra={"candidate": str(candidate), "output": excerpt(observed[0].output)},
    )


def limits_record(
    runs: Sequence[JudgedRun], limits: Limits, *, network: bool, pytest_config: str
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
    return {
        **limits.to_dict(),
        "sandbox": {
            "processes": mode,
            "why_not_namespaces": observed.isolation.get("why"),
            "uid": applied.get("uid"),
            "nproc_enforced": applied.get("nproc") is not None,
            "landlock_abi": applied.get("landlock_abi", 0),
            "network": net,
            "pytest_config": pytest_config,
        },
    }
