"""A scored candidate's judgement, added to its ScoreResult: the gate, the trusted facts,
the signals, and ``extra["judge"]``.

Signals (absent when there is no judgement, never 0 in its place): ``judge_score`` (0-1),
``judge_tokens_input``, ``judge_tokens_output``, ``judge_cost_usd`` (spent by this result's
judging: 0 for one from the cache) and, with the canary, ``judge_injection_shift``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from pytest_scorewright.judge.assess import Judge, Judgement
from pytest_scorewright.judge.prompt_text import RenderError, program_files
from pytest_scorewright.result import ScoreResult, Signal

#: The key of ``ScoreResult.extra`` that holds the judgement.
EXTRA_KEY = "judge"


def gate_refusal(result: ScoreResult, gate: float | None) -> str | None:
    """Why ``result`` is not judged (None: it is): the judge re-ranks programs that work."""
    if result.infrastructure:
        return "not judged: the candidate was not scored (a reason of ours)"
    if result.integrity.rejected:
        return "not judged: the result was rejected by the integrity policy"
    if gate is None:
        return None
    rate = result.signal("pass_rate")
    if rate is None:
        return f"not judged: no pass rate was measured (gate {gate:g})"
    if rate < gate:
        return f"not judged: pass rate {rate:.3f} is below the gate {gate:g}"
    return None


def facts(result: ScoreResult) -> dict[str, float | str]:
    """What the parent measured, for the judge to read beside the program."""
    counted = [t for t in result.tests if t.applicable]
    found: dict[str, float | str] = {
        "tests passed": f"{sum(t.passed for t in counted)} of {len(counted)}",
    }
    for name in ("pass_rate", "duration_s", "speedup", "line_coverage"):
        value = result.signal(name)
        if value is not None:
            found[name] = float(value)
    return found


def judged(judge: Judge, result: ScoreResult, candidate: Path) -> ScoreResult:
    """``result`` with its judgement (once: a result that has one is returned as it is)."""
    if EXTRA_KEY in result.extra:
        return result
    refusal = gate_refusal(result, judge.settings.gate)
    if refusal is not None:
        return _with(result, _not_judged(judge, refusal), None)
    try:
        files = program_files(candidate)
    except RenderError as exc:
        return _with(result, _not_judged(judge, str(exc)), None)
    known = facts(result)
    judgement = judge.assess(files, known)
    canary = judge.canary(files, judgement, known).to_dict() if judge.settings.canary else None
    return _with(result, judgement, canary)


def _not_judged(judge: Judge, reason: str) -> Judgement:
    return Judgement(False, None, None, reason, judge.settings.model)


def _with(result: ScoreResult, judgement: Judgement, canary: dict[str, Any] | None) -> ScoreResult:
    record: dict[str, Any] = judgement.to_dict()
    signals = []
    if judgement.ok and judgement.score is not None:
        signals.append(Signal("judge_score", judgement.score, "ratio", True))
    for name in ("tokens_input", "tokens_output"):
        value = getattr(judgement, name)
        if value is not None:
            signals.append(Signal(f"judge_{name}", float(value), "count", False))
    if judgement.cost_usd is not None:
        signals.append(Signal("judge_cost_usd", judgement.cost_usd, "USD", False))
    if canary is not None:
        record["canary"] = canary
        if canary["ok"]:
            signals.append(Signal("judge_injection_shift", canary["shift"], "score", False))
        if canary.get("words_shift") is not None:
            signals.append(Signal("judge_words_shift", canary["words_shift"], "score", False))
    present = {s.name for s in result.signals}
    added = tuple(s for s in signals if s.name not in present)
    return dataclasses.replace(
        result, signals=(*result.signals, *added), extra={**result.extra, EXTRA_KEY: record}
    )
