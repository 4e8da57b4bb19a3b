"""One or two human lines for a ScoreResult (terminal summary, CLI)."""

from __future__ import annotations

import os
from pathlib import Path

from pytest_scorewright._text import clean
from pytest_scorewright.result import ScoreResult

#: How a test the reference is flaky in reads (scoring/applicable.py).
FLAKY_MARK = "not applicable: the reference is flaky in it"


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def headline(result: ScoreResult) -> str:
    """E.g. ``12/14 passed (85.7%), held-out 3/4 (75.0%), divergence +0.17``; for a rejected
    result, what its runs measured: ``rejected, none credited: 15/22 passed as run (68.2%),
    held-out 1/8 (12.5%), divergence +0.88``."""
    rejected = result.integrity.rejected and result.signal("as_run_tests_passed") is not None
    prefix = "as_run_" if rejected else ""
    parts: list[str] = []
    total, passed = result.signal("tests_total"), result.signal(f"{prefix}tests_passed")
    rate = result.signal(f"{prefix}pass_rate")
    if total is not None and passed is not None:
        parts.append(
            f"{int(passed)}/{int(total)} passed{' as run' if rejected else ''}"
            + (f" ({_pct(rate)})" if rate else "")
        )
    heldout = [t for t in result.tests if t.heldout and t.applicable]
    hrate = result.signal(f"{prefix}heldout_pass_rate")
    if heldout and hrate is not None:
        hpassed = sum((t.outcome == "passed") if rejected else t.passed for t in heldout)
        parts.append(f"held-out {hpassed}/{len(heldout)} ({_pct(hrate)})")
    not_applicable = result.signal("tests_not_applicable")
    if not_applicable:
        parts.append(f"{int(not_applicable)} not applicable")
    divergence = result.signal(f"{prefix}heldout_divergence")
    if divergence is not None:
        parts.append(f"divergence {divergence:+.2f}")
    for name in ("line_coverage", "branch_coverage"):
        value = result.signal(name)
        if value is not None:
            parts.append(f"{name.replace('_', ' ')} {_pct(value)}")
    if not parts:
        return "no tests measured"
    return ("rejected, none credited: " if rejected else "") + ", ".join(parts)


def fitness_of(result: ScoreResult) -> float | None:
    """The fitness a loop optimises (``combined_score``), where one judged the result."""
    judged = result.extra.get("fitness")
    score = judged.get("combined_score") if isinstance(judged, dict) else None
    return float(score) if isinstance(score, (int, float)) else None


def failure_lines(result: ScoreResult) -> list[str]:
    """One line for each applicable test that did not pass: its id, outcome and message."""
    lines = []
    for test in result.tests:
        if test.applicable and not test.passed:
            message = (test.message or "").strip().splitlines()
            lines.append(f"{test.nodeid} [{test.outcome}]" + (f": {message[0]}" if message else ""))
    return [clean(line)[:300] for line in lines]


def summary_lines(
    result: ScoreResult, out: Path | None, write_error: str | None = None
) -> list[str]:
    lines = [f"scorewright: {headline(result)}"]
    if result.error and result.infrastructure:
        lines.append(f"scorewright: not scored, for a reason of ours (retry it): {result.error}")
    elif result.error:  # the candidate's doing: its import failed, it hung, it crashed
        lines.append(f"scorewright: the candidate's failure: {result.error}")
    integrity = result.integrity
    strong = [r.code for r in integrity.reasons if r.severity != "hint"]
    if strong:
        lines.append(f"scorewright: integrity flagged: {', '.join(strong)}")
    if integrity.rejected:
        ran = [t for t in result.tests if t.applicable]
        passed = sum(t.outcome == "passed" for t in ran)
        lines.append(
            f"scorewright: rejected by the integrity policy ({integrity.policy}): {passed}/"
            f"{len(ran)} passed as run, none credited ({', '.join(strong) or 'hints'})"
        )
        lines += [
            f"scorewright:   {r.code}: {r.detail}"
            for r in integrity.reasons
            if r.severity != "hint"
        ][:3]
    else:
        failing = [t.nodeid for t in result.tests if t.applicable and not t.passed]
        if failing:
            more = f" and {len(failing) - 3} more" if len(failing) > 3 else ""
            lines.append(f"scorewright: failing: {', '.join(failing[:3])}{more}")
    flaky = [t.nodeid for t in result.tests if FLAKY_MARK in (t.message or "")]
    if flaky:
        more = f" and {len(flaky) - 3} more" if len(flaky) > 3 else ""
        lines.append(
            f"scorewright: set aside, flaky in the reference: {', '.join(flaky[:3])}{more}"
        )
    judged = fitness_of(result)
    objectives = [s for s in result.signals if s.name.startswith("objective_")]
    if judged is not None or objectives:
        shown = [f"fitness {judged:.4g}"] if judged is not None else []
        shown += [f"{s.name} {s.value:.4g}" for s in objectives]
        lines.append(f"scorewright: {', '.join(shown)}")
    if write_error:
        lines.append(f"scorewright: ERROR {write_error}")
    elif out is not None:
        lines.append(f"scorewright: wrote {os.fspath(out)}")
    # A result file may come from anywhere (an older version, a hand edit): what reaches the
    # terminal is cleaned here whatever the file holds.
    return [clean(line) for line in lines]
