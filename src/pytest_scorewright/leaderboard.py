"""Rank many ScoreResults by a fitness function: a terminal table and a self-contained page.

Flagged candidates are marked, never dropped; a candidate whose fitness could not be computed
ranks last with the error shown, never with an invented score, and so does one that was not
scored for a reason of ours or the machine's (``infrastructure``: score it again).
"""

from __future__ import annotations

import html
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_scorewright.fitness import Fitness
from pytest_scorewright.integrity.codes import STRENGTH
from pytest_scorewright.result import ScoreResult


@dataclass(frozen=True)
class Row:
    rank: int
    candidate: str
    fitness: float | None
    fitness_error: str | None
    pass_rate: float | None
    visible: float | None
    heldout: float | None
    divergence: float | None
    coverage: float | None
    seconds: float | None
    flagged: tuple[str, ...]
    rejected: bool
    ok: bool
    #: Not scored, for a reason of ours or the machine's (its ``fitness_error`` says why).
    infrastructure: bool = False


def rank(results: Sequence[tuple[str, ScoreResult]], fitness: Fitness) -> list[Row]:
    """Best first: by fitness, then pass rate, then time; no fitness ranks last."""
    unsorted = []
    for label, result in results:
        if result.infrastructure:
            score: float | None = None
            error: str | None = (
                "not scored, for a reason of ours or the machine's (score it again): "
                f"{result.error}"
            )
        else:
            outcome = fitness.evaluate(result)
            score, error = outcome.score, outcome.error
        unsorted.append(
            (
                score is None,
                -(score or 0.0),
                -(result.signal("pass_rate") or 0.0),
                result.signal("duration_s") or 0.0,
                label,
                result,
                score,
                error,
            )
        )
    unsorted.sort(key=lambda r: r[:5])
    return [
        Row(
            rank=i,
            candidate=label,
            fitness=score,
            fitness_error=error,
            pass_rate=result.signal("pass_rate"),
            visible=result.signal("visible_pass_rate"),
            heldout=result.signal("heldout_pass_rate"),
            divergence=result.signal("heldout_divergence"),
            coverage=result.signal("line_coverage"),
            seconds=result.signal("duration_s"),
            flagged=_flag_codes(result),
            rejected=result.integrity.rejected,
            ok=result.ok,
            infrastructure=result.infrastructure,
        )
        for i, (_, _, _, _, label, result, score, error) in enumerate(unsorted, start=1)
    ]


def label_for(path: str, result: ScoreResult) -> str:
    candidate = result.extra.get("candidate")
    return Path(str(candidate)).stem if isinstance(candidate, str) else Path(path).stem


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _num(value: float | None, fmt: str = "{:.3f}") -> str:
    return "-" if value is None else fmt.format(value)


COLUMNS = (
    "rank",
    "candidate",
    "fitness",
    "pass",
    "visible",
    "held-out",
    "diverg.",
    "cover.",
    "time",
    "flagged",
)


def _flag_codes(result: ScoreResult) -> tuple[str, ...]:
    """The codes that flag a result (tamper and gaming evidence, strongest first); hints
    only when the policy rejected the result on them (fail-closed)."""
    reasons = sorted(result.integrity.reasons, key=lambda r: STRENGTH[r.severity])
    strong = tuple(r.code for r in reasons if r.severity != "hint")
    if strong or not result.integrity.rejected:
        return strong
    return tuple(r.code for r in reasons)


def _cells(row: Row) -> list[str]:
    if row.fitness is not None:
        fitness = _num(row.fitness)
    else:
        fitness = "not scored" if row.infrastructure else "error"
    flag = "-"
    if row.flagged:
        flag = ("REJECTED " if row.rejected else "") + ", ".join(row.flagged[:3])
        if len(row.flagged) > 3:
            flag += f" +{len(row.flagged) - 3}"
    return [
        str(row.rank),
        row.candidate,
        fitness,
        _pct(row.pass_rate),
        _pct(row.visible),
        _pct(row.heldout),
        _num(row.divergence, "{:+.2f}"),
        _pct(row.coverage),
        _num(row.seconds, "{:.2f}s"),
        flag,
    ]


def table(rows: Sequence[Row]) -> str:
    grid = [list(COLUMNS), *(_cells(r) for r in rows)]
    widths = [max(len(line[i]) for line in grid) for i in range(len(COLUMNS))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip()
        for line in grid
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    errors = [
        f"{r.candidate}: {r.fitness_error}"
        if r.infrastructure
        else f"{r.candidate}: fitness error: {r.fitness_error}"
        for r in rows
        if r.fitness_error
    ]
    return "\n".join(lines + errors) + "\n"


def page(rows: Sequence[Row], fitness_name: str) -> str:
    """A self-contained HTML page (inline CSS and SVG; no network assets)."""
    head = "".join(f"<th>{html.escape(c)}</th>" for c in COLUMNS)
    body = "".join(
        f'<tr class="{"flagged" if r.flagged else ""}">'
        + "".join(f"<td>{html.escape(c)}</td>" for c in _cells(r))
        + "</tr>"
        for r in rows
    )
    flagged = sum(bool(r.flagged) for r in rows)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>scorewright leaderboard</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2rem; color: #1b1f24; }}
h1 {{ font-size: 1.4rem; margin-bottom: 0.2rem; }}
p.meta {{ color: #57606a; margin-top: 0; }}
table {{ border-collapse: collapse; margin-top: 1.5rem; font-size: 0.9rem; }}
th, td {{ padding: 0.35rem 0.7rem; border-bottom: 1px solid #d0d7de; text-align: left; }}
th {{ background: #f6f8fa; }}
tr.flagged td {{ background: #fff1e5; }}
tr.flagged td:last-child {{ color: #bc4c00; font-weight: 600; }}
.legend span {{ display: inline-block; margin-right: 1rem; }}
.swatch {{ display: inline-block; width: 0.8rem; height: 0.8rem; margin-right: 0.3rem;
  vertical-align: middle; }}
</style></head><body>
<h1>scorewright leaderboard</h1>
<p class="meta">{len(rows)} candidates ranked by fitness <code>{html.escape(fitness_name)}</code>;
{flagged} flagged (marked, not dropped).</p>
{_chart(rows)}
<p class="legend"><span><i class="swatch" style="background:#0969da"></i>fitness</span>
<span><i class="swatch" style="background:#1a7f37"></i>visible pass rate</span>
<span><i class="swatch" style="background:#8250df"></i>held-out pass rate</span>
<span><i class="swatch" style="background:#fff1e5;border:1px solid #bc4c00"></i>flagged</span></p>
<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>
</body></html>
"""


def _chart(rows: Sequence[Row]) -> str:
    # Labels are rotated down-left from under each group: room on the left and below.
    bar, gap, top, height, left, below = 14, 18, 20, 180, 110, 100
    scale = max([1.0, *(r.fitness or 0.0 for r in rows)])
    width = left + len(rows) * (3 * bar + gap) + gap
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{top + height + below}" role="img" '
        'aria-label="fitness and pass rates per candidate">',
        f'<line x1="{left}" y1="{top + height}" x2="{width}" y2="{top + height}" '
        'stroke="#8c959f"/>',
        f'<text x="{left - 6}" y="{top + 4}" font-size="10" text-anchor="end">{scale:g}</text>',
        f'<text x="{left - 6}" y="{top + height}" font-size="10" text-anchor="end">0</text>',
    ]
    for i, row in enumerate(rows):
        x = left + gap + i * (3 * bar + gap)
        if row.flagged:
            parts.append(
                f'<rect x="{x - 4}" y="{top}" width="{3 * bar + 8}" height="{height}" '
                'fill="#fff1e5" stroke="#bc4c00" stroke-dasharray="3,2"/>'
            )
        for j, (value, colour) in enumerate(
            (
                ((row.fitness or 0.0) / scale, "#0969da"),
                (row.visible or 0.0, "#1a7f37"),
                (row.heldout or 0.0, "#8250df"),
            )
        ):
            h = max(0.0, min(1.0, value)) * height
            parts.append(
                f'<rect x="{x + j * bar}" y="{top + height - h:.1f}" width="{bar - 2}" '
                f'height="{h:.1f}" fill="{colour}"/>'
            )
        name = html.escape(row.candidate[:16])
        parts.append(
            f'<text x="{x + 1.5 * bar}" y="{top + height + 14}" font-size="10" '
            f'text-anchor="end" transform="rotate(-35 {x + 1.5 * bar} {top + height + 14})">'
            f"#{row.rank} {name}</text>"
        )
    parts.append("</svg>")
    return "\n".join(parts)


def load(paths: Sequence[str | os.PathLike[str]]) -> list[tuple[str, ScoreResult]]:
    loaded = []
    for path in paths:
        result = ScoreResult.read(path)
        loaded.append((label_for(os.fspath(path), result), result))
    return loaded
