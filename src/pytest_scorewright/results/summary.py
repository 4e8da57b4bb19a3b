"""One or two human lines for a ScoreResult (terminal summary, CLI)."""

from __future__ import annotations

import os
from pathlib import Path

from pytest_scorewright._text import clean
from pytest_scorewright.result import ScoreResult


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def headline(result: ScoreResult) -> str:
    """E.g. ``12/14 passed (85.7%), held-out 3/4 (75.0%), divergence +0.17``."""
    parts: list[str] = []
    total, passed = result.signal("tests_total"), result.signal("tests_passed")
    rate = result.signal("pass_rate")
    if total is not None and passed is not None:
        parts.append(f"{int(passed)}/{int(total)} passed" + (f" ({_pct(rate)})" if rate else ""))
    heldout = [t for t in result.tests if t.heldout and t.applicable]
    hrate = result.signal("heldout_pass_rate")
    if heldout and hrate is not None:
        hpassed = sum(t.passed for t in heldout)
        parts.append(f"held-out {hpassed}/{len(heldout)} ({_pct(hrate)})")
    not_applicable = result.signal("tests_not_applicable")
    if not_applicable:
        parts.append(f"{int(not_applicable)} not applicable")
    divergence = result.signal("heldout_divergence")
    if divergence is not None:
        parts.append(f"divergence {divergence:+.2f}")
    for name in ("line_coverage", "branch_coverage"):
        value = result.signal(name)
        if value is not None:
            parts.append(f"{name.replace('_', ' ')} {_pct(value)}")
    return ", ".join(parts) if parts else "no tests measured"


def summary_lines(
    result: ScoreResult, out: Path | None, write_error: str | None = None
) -> list[str]:
    lines = [f"scorewright: {headline(result)}"]
    if result.error and result.infrastructure:
        lines.append(f"scorewright: not scored, for a reason of ours (retry it): {result.error}")
    elif result.error:
        lines.append(f"scorewright: not a full measurement: {result.error}")
    integrity = result.integrity
    strong = [r.code for r in integrity.reasons if r.severity != "hint"]
    if strong:
        lines.append(f"scorewright: integrity flagged: {', '.join(strong)}")
    if integrity.rejected:
        lines.append(
            f"scorewright: rejected by the integrity policy ({integrity.policy}): no test credited"
        )
    if write_error:
        lines.append(f"scorewright: ERROR {write_error}")
    elif out is not None:
        lines.append(f"scorewright: wrote {os.fspath(out)}")
    # A result file may come from anywhere (an older version, a hand edit): what reaches the
    # terminal is cleaned here whatever the file holds.
    return [clean(line) for line in lines]
