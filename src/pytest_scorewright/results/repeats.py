"""One candidate measured several times: each signal's mean and a 95% interval, flaky tests
named, and the conservative figure a loop can promote on.

- Pass rates (``pass_rate``, ``visible_pass_rate``, ``heldout_pass_rate``): over test
  outcomes across repeats. A test that passed in every repeat (or failed in every one)
  counts as exactly that; a flaky test's pass probability is known only within the Wilson
  score interval of its passes over its repeats (Wilson, not the normal approximation: it
  stays inside [0, 1] and is sane at small counts); the rate's interval is the mean of those
  bounds over the tests. So a deterministic suite's rate has no width, and only flakiness
  lowers what ``confirm`` credits.
- Every other signal (speedup, durations, objectives): a percentile bootstrap interval of the
  mean over the repeats' values (2,000 resamples, a fixed seed, so the same values give the
  same interval). With 3 to 5 repeats it is rough, and says so by its width.
- A test whose outcome differs between repeats is flaky: named in ``extra.repeats``.
- ``conservative``: each signal at the end of its interval that is worse for the candidate
  (the lower bound where higher is better), which is what ``Evaluator.confirm`` credits.

A repeat that was rejected, failed to run, or failed for reasons of ours ends the repeats:
that result is returned as it is (with ``extra.repeats`` saying so), never averaged away.
"""

from __future__ import annotations

import dataclasses
import math
import random
import statistics
from collections.abc import Callable, Sequence
from typing import Any

from pytest_scorewright.errors import ConfigError
from pytest_scorewright.result import ScoreResult, TestRecord

#: Two-sided 95%.
CONFIDENCE = 0.95
_Z = 1.959963984540054
BOOTSTRAP_RESAMPLES = 2000
_RATES: dict[str, Callable[[TestRecord], bool]] = {
    "pass_rate": lambda t: True,
    "visible_pass_rate": lambda t: not t.heldout,
    "heldout_pass_rate": lambda t: t.heldout,
}


def wilson(successes: int, trials: int) -> tuple[float, float]:
    """The 95% Wilson score interval of a proportion."""
    if trials <= 0:
        return (0.0, 1.0)
    p = successes / trials
    denominator = 1 + _Z**2 / trials
    centre = (p + _Z**2 / (2 * trials)) / denominator
    half = _Z * math.sqrt(p * (1 - p) / trials + _Z**2 / (4 * trials**2)) / denominator
    return (max(0.0, centre - half), min(1.0, centre + half))


def bootstrap_mean(
    values: Sequence[float], resamples: int = BOOTSTRAP_RESAMPLES
) -> tuple[float, float]:
    """A percentile bootstrap 95% interval of the mean of ``values`` (seeded: repeatable)."""
    if len(values) < 2 or min(values) == max(values):
        return (min(values), max(values)) if values else (math.nan, math.nan)
    rng = random.Random(0)  # noqa: S311 - a statistic, not a secret
    n = len(values)
    means = sorted(sum(rng.choices(values, k=n)) / n for _ in range(resamples))
    tail = (1 - CONFIDENCE) / 2
    return (means[int(tail * resamples)], means[min(resamples - 1, int((1 - tail) * resamples))])


def settled(result: ScoreResult) -> bool:
    """A result worth repeating: measured, and not rejected."""
    return result.ok and not result.infrastructure and not result.integrity.rejected


def combine(results: Sequence[ScoreResult]) -> ScoreResult:
    """One result from ``results`` (repeats of one candidate): signals at their means, and
    ``extra.repeats`` with each signal's values and interval and the flaky tests."""
    if not results:
        raise ValueError("no results to combine")
    stop = next((r for r in results if not settled(r)), None)
    if stop is not None:
        note = {"k": len(results), "stopped": "a repeat was not a full measurement or was rejected"}
        return dataclasses.replace(stop, extra={**stop.extra, "repeats": note})
    first = results[0]
    values = {s.name: [r.signal(s.name) for r in results] for s in first.signals}
    signals, intervals = [], {}
    for signal in first.signals:
        seen = [v for v in values[signal.name] if v is not None]
        if len(seen) != len(results):
            signals.append(signal)
            continue
        interval = _interval(signal.name, results, seen)
        intervals[signal.name] = {"mean": statistics.fmean(seen), "low": interval[0],
                                  "high": interval[1], "values": seen}  # fmt: skip
        signals.append(dataclasses.replace(signal, value=statistics.fmean(seen)))
    summary: dict[str, Any] = {
        "k": len(results),
        "confidence": CONFIDENCE,
        "signals": intervals,
        "flaky_tests": flaky_tests(results),
    }
    return dataclasses.replace(
        first, signals=tuple(signals), extra={**first.extra, "repeats": summary}
    )


def conservative(result: ScoreResult) -> ScoreResult:
    """Each signal at the worse end of its interval (``combine``'s), for promotion."""
    intervals = result.extra.get("repeats", {}).get("signals", {})
    signals = []
    for signal in result.signals:
        found = intervals.get(signal.name)
        if found is None or signal.higher_is_better is None:
            signals.append(signal)
            continue
        bound = found["low"] if signal.higher_is_better else found["high"]
        signals.append(dataclasses.replace(signal, value=float(bound)))
    return dataclasses.replace(result, signals=tuple(signals))


def flaky_tests(results: Sequence[ScoreResult]) -> list[str]:
    """Test ids whose outcome is not the same in every repeat."""
    outcomes: dict[str, set[str]] = {}
    for result in results:
        for test in result.tests:
            outcomes.setdefault(test.nodeid, set()).add(test.outcome)
    return sorted(nodeid for nodeid, seen in outcomes.items() if len(seen) > 1)


def _interval(name: str, results: Sequence[ScoreResult], seen: list[float]) -> tuple[float, float]:
    counted = _RATES.get(name)
    if counted is None:
        return bootstrap_mean(seen)
    passes: dict[str, list[bool]] = {}
    for result in results:
        for test in result.tests:
            if test.applicable and counted(test):
                passes.setdefault(test.nodeid, []).append(test.passed)
    if not passes:
        return (min(seen), max(seen))
    low = high = 0.0
    for outcomes in passes.values():
        # A test that passed (or failed) in every repeat is what it is; a flaky one is a
        # proportion known only to within its Wilson interval over its repeats.
        wins = sum(outcomes)
        bounds = (
            wilson(wins, len(outcomes)) if 0 < wins < len(outcomes) else (wins / len(outcomes),) * 2
        )
        low, high = low + bounds[0], high + bounds[1]
    return (low / len(passes), high / len(passes))


def measured(score: Callable[[], ScoreResult], k: int) -> ScoreResult:
    """``score()`` up to ``k`` times, combined (:func:`combine`); it stops at the first
    result that is not a settled measurement (an error, a rejection)."""
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ConfigError(f"repeats must be a whole number of 1 or more, not {k!r}")
    results = []
    for _ in range(k):
        results.append(score())
        if not settled(results[-1]):
            break
    return combine(results)
