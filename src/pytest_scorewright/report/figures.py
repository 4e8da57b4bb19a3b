"""The figures behind the report, aggregated so that the page stays small and fast whatever
the run's size: one point per generation (consecutive generations merged past
``MAX_POINTS``), at most ``MAX_HEAT_ROWS`` tests by ``MAX_HEAT_COLUMNS`` columns in the heat
map, and the top N candidates in the table. ``scorewright report --json`` writes these.

Where no generation was recorded, results are grouped in the order they were read (the x
axis then says so): generation comes from the loop's own files or from ``--meta
generation=N``.
"""

from __future__ import annotations

import math
import re
import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pytest_scorewright.report.records import Candidate, TestIndex, row
from pytest_scorewright.report.status import STATUSES
from pytest_scorewright.results.measure import AS_RUN

MAX_POINTS = 300
MAX_HEAT_ROWS = 60
MAX_HEAT_COLUMNS = 60
#: Test names listed as never solved, at most.
MAX_UNSOLVED = 100


@dataclass(frozen=True)
class Axis:
    #: "generation", or "order" where no candidate has one.
    kind: str
    #: Each point's label ("7", "10-19", "results 1-100").
    labels: list[str]
    #: Each point's candidates, by index into the run's list.
    members: list[list[int]]


def axis(candidates: Sequence[Candidate], points: int = MAX_POINTS) -> tuple[Axis, int]:
    """The x axis, and how many candidates it leaves out (no generation where others have)."""
    by_generation: dict[int, list[int]] = {}
    for i, c in enumerate(candidates):
        if c.generation is not None:
            by_generation.setdefault(c.generation, []).append(i)
    if by_generation:
        keys = sorted(by_generation)
        groups = [(str(k), str(k), by_generation[k]) for k in keys]
        left_out = len(candidates) - sum(len(v) for v in by_generation.values())
        return _merged("generation", groups, points), left_out
    size = max(1, math.ceil(len(candidates) / points))
    groups = [
        (
            str(start + 1),
            str(min(start + size, len(candidates))),
            list(range(start, min(start + size, len(candidates)))),
        )
        for start in range(0, len(candidates), size)
    ]
    return _merged("order", groups, points), 0


def _merged(kind: str, groups: list[tuple[str, str, list[int]]], points: int) -> Axis:
    step = max(1, math.ceil(len(groups) / points))
    labels, members = [], []
    for start in range(0, len(groups), step):
        chunk = groups[start : start + step]
        first, last = chunk[0][0], chunk[-1][1]
        labels.append(first if first == last else f"{first}-{last}")
        members.append([i for _, _, found in chunk for i in found])
    return Axis(kind, labels, members)


def _quantile(sorted_values: Sequence[float], q: float) -> float:
    position = q * (len(sorted_values) - 1)
    low = math.floor(position)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def fitness_series(candidates: Sequence[Candidate], ax: Axis) -> dict[str, list[float | None]]:
    best_so_far: float | None = None
    confirmed_so_far: float | None = None
    out: dict[str, list[float | None]] = {
        k: [] for k in ("best", "best_found", "best_confirmed", "median", "p10", "p90")
    }
    for members in ax.members:
        values = sorted(f for i in members if (f := candidates[i].fitness) is not None)
        confirmed = [
            f
            for i in members
            if candidates[i].confirmed and (f := candidates[i].fitness) is not None
        ]
        if values:
            best_so_far = values[-1] if best_so_far is None else max(best_so_far, values[-1])
        if confirmed:
            top = max(confirmed)
            confirmed_so_far = top if confirmed_so_far is None else max(confirmed_so_far, top)
        out["best"].append(_round(values[-1]) if values else None)
        out["best_found"].append(_round(best_so_far))
        out["best_confirmed"].append(_round(confirmed_so_far))
        out["median"].append(_round(statistics.median(values)) if values else None)
        out["p10"].append(_round(_quantile(values, 0.1)) if values else None)
        out["p90"].append(_round(_quantile(values, 0.9)) if values else None)
    if all(v is None for v in out["best_confirmed"]):
        del out["best_confirmed"]
    return out


def _mean(values: Sequence[float]) -> float | None:
    return _round(sum(values) / len(values)) if values else None


def rates_series(candidates: Sequence[Candidate], ax: Axis) -> dict[str, list[float | None]]:
    """Mean visible and held-out pass rates and divergence, and the largest divergence."""
    out: dict[str, list[float | None]] = {
        k: [] for k in ("visible", "heldout", "divergence", "divergence_max")
    }
    for members in ax.members:
        group = [candidates[i] for i in members]
        out["visible"].append(_mean([c.visible for c in group if c.visible is not None]))
        out["heldout"].append(_mean([c.heldout for c in group if c.heldout is not None]))
        divergence = [c.divergence for c in group if c.divergence is not None]
        out["divergence"].append(_mean(divergence))
        out["divergence_max"].append(_round(max(divergence)) if divergence else None)
    return out


def status_counts(candidates: Sequence[Candidate], ax: Axis) -> dict[str, list[int]]:
    counts = [Counter(candidates[i].status for i in members) for members in ax.members]
    return {s: [c[s] for c in counts] for s in STATUSES if any(c[s] for c in counts)}


def flag_counts(candidates: Sequence[Candidate], ax: Axis) -> dict[str, list[int]]:
    """Flagged or rejected candidates per point, each counted once, under its strongest
    evidence (``(rejected)`` for one rejected on hints alone): a stack's height is a number
    of candidates."""
    counts = []
    for members in ax.members:
        found: Counter[str] = Counter()
        for i in members:
            flags = candidates[i].flags
            if flags:
                found[flags[0]] += 1
            elif candidates[i].rejected:
                found["(rejected)"] += 1
        counts.append(found)
    codes = sorted(
        {code for c in counts for code in c if c[code]}, key=lambda k: (k == "(rejected)", k)
    )
    return {code: [c[code] for c in counts] for code in codes}


def signal_series(candidates: Sequence[Candidate], ax: Axis) -> dict[str, dict[str, Any]]:
    """Every other numeric signal (speed, objectives, a judge's score): best and median. A
    rejected result's ``as_run_*`` figures are no candidate's best: they stay in its own
    table and the CSV."""
    names = sorted({n for c in candidates for n in c.signals if not n.startswith(AS_RUN)})
    out: dict[str, dict[str, Any]] = {}
    for name in names:
        higher = next((c.directions[name] for c in candidates if name in c.directions), None)
        if higher is None:
            higher = known_direction(name)
        best, median = [], []
        for members in ax.members:
            values = sorted(
                v for i in members if (v := candidates[i].signals.get(name)) is not None
            )
            pick = (values[-1] if higher is not False else values[0]) if values else None
            best.append(_round(pick))
            median.append(_round(statistics.median(values)) if values else None)
        out[name] = {"higher_is_better": higher, "best": best, "median": median}
    return out


#: Signals a loop's metrics carry without a direction, where less is better: time, memory,
#: money (a loop's metrics say nothing of direction; our own results do).
_LESS_IS_BETTER = re.compile(
    r"(^|_)(duration|cpu|time|seconds|rss|memory|cost|tokens)(_|$)|_s$|_mb$"
)


def known_direction(name: str) -> bool | None:
    """False for a signal whose name says it is a time, a size or a cost; else None."""
    return False if _LESS_IS_BETTER.search(name.removeprefix("scorewright_")) else None


def cost_series(candidates: Sequence[Candidate], ax: Axis) -> dict[str, list[float | None]]:
    out: dict[str, list[float | None]] = {}
    for name in ("cost_usd", "tokens"):
        per: list[float | None] = []
        total, total_list = 0.0, []
        for members in ax.members:
            values = [v for i in members if (v := getattr(candidates[i], name)) is not None]
            per.append(_round(sum(values)) if values else None)
            total += sum(values)
            total_list.append(_round(total))
        if any(v is not None for v in per):
            out[name] = per
            out[f"{name}_total"] = list(total_list)
    return out


def heat(candidates: Sequence[Candidate], tests: TestIndex, ax: Axis) -> dict[str, Any]:
    """Per test and point: the share of candidates that passed it (None: none ran it)."""
    if not tests.ids:
        return {}
    step = max(1, math.ceil(len(ax.members) / MAX_HEAT_COLUMNS))
    columns = [
        [i for m in ax.members[s : s + step] for i in m] for s in range(0, len(ax.members), step)
    ]
    labels = [_span(ax.labels[s : s + step]) for s in range(0, len(ax.members), step)]
    count = len(tests.ids)
    ran = [[0] * len(columns) for _ in range(count)]
    passed = [[0] * len(columns) for _ in range(count)]
    first: list[int | None] = [None] * count
    for column, members in enumerate(columns):
        for i in members:
            c = candidates[i]
            _tally(c.ran, ran, column)
            _tally(c.passed, passed, column)
        for t in range(count):
            if first[t] is None and passed[t][column]:
                first[t] = column
    names = list(tests.ids)
    order = sorted(range(count), key=lambda t: (first[t] is None, first[t] or 0, t))
    unsolved = [names[t] for t in order if first[t] is None]
    shown = order if count <= MAX_HEAT_ROWS else _spread(order, MAX_HEAT_ROWS)
    return {
        "columns": labels,
        "tests": [names[t] for t in shown],
        "heldout": [tests.heldout[t] for t in shown],
        "share": [
            [_round(p / r) if r else None for p, r in zip(passed[t], ran[t], strict=True)]
            for t in shown
        ],
        "first_solved": {names[t]: labels[f] for t in order if (f := first[t]) is not None},
        "unsolved": unsolved[:MAX_UNSOLVED],
        "unsolved_count": len(unsolved),
        "tests_total": count,
    }


def _span(labels: Sequence[str]) -> str:
    first, last = labels[0].split("-")[0], labels[-1].split("-")[-1]
    return first if first == last else f"{first}-{last}"


def _tally(bits: int, table: list[list[int]], column: int) -> None:
    index = 0
    while bits:
        if bits & 1:
            table[index][column] += 1
        bits >>= 1
        index += 1


def _spread(order: list[int], keep: int) -> list[int]:
    """``keep`` of ``order``, evenly spread, the first and last included."""
    return [order[round(i * (len(order) - 1) / (keep - 1))] for i in range(keep)]


def ranked(candidates: Sequence[Candidate]) -> list[int]:
    """Indices, best first: fitness (none last), pass rate, then the order read."""
    return sorted(
        range(len(candidates)),
        key=lambda i: (
            candidates[i].fitness is None,
            -(candidates[i].fitness or 0.0),
            -(candidates[i].pass_rate or 0.0),
            i,
        ),
    )


def first_seen(counts: dict[str, list[int]], labels: Sequence[str]) -> dict[str, str]:
    """Where each kind first appears on the x axis (when gaming started, and how)."""
    return {
        kind: labels[next(i for i, n in enumerate(values) if n)]
        for kind, values in counts.items()
        if any(values)
    }


def collect(
    candidates: Sequence[Candidate], tests: TestIndex, notes: Sequence[str], top: int
) -> dict[str, Any]:
    """Every figure of the report, as plain JSON-ready data."""
    ax, left_out = axis(candidates)
    flags = flag_counts(candidates, ax)
    statuses = status_counts(candidates, ax)
    best = ranked(candidates)
    return {
        "results": len(candidates),
        "axis": {"kind": ax.kind, "labels": ax.labels, "sizes": [len(m) for m in ax.members]},
        "left_out_without_generation": left_out,
        "notes": list(notes),
        "fitness": fitness_series(candidates, ax),
        "pass_rates": rates_series(candidates, ax),
        "statuses": statuses,
        "status_totals": dict(Counter(c.status for c in candidates)),
        "integrity": flags,
        "integrity_first_seen": first_seen(flags, ax.labels),
        "signals": signal_series(candidates, ax),
        "cost": cost_series(candidates, ax),
        "heat_map": heat(candidates, tests, ax),
        "top": [row(candidates[i], rank) for rank, i in enumerate(best[:top], start=1)],
    }
