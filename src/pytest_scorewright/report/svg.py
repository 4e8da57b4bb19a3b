"""Charts as inline SVG, written here: no plotting library, nothing fetched when the page is
opened, and a size that depends on the number of points drawn (at most a few hundred: the
figures are aggregated first), never on the number of results. docs/report.md says why.

Every text that reaches a chart passes :func:`text` (cleaned and HTML-escaped): test names and
codes come from result files, which candidates influence.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pytest_scorewright.html_page import text

WIDTH = 1100
HEIGHT = 240
LEFT, RIGHT, TOP, BOTTOM = 56, 16, 14, 44


@dataclass(frozen=True)
class Series:
    name: str
    values: Sequence[float | None]
    colour: str
    dash: str = ""
    width: float = 2.0


def _open(name: str, label: str, height: int = HEIGHT, width: int = WIDTH) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" data-chart="{name}" '
        f'viewBox="0 0 {width} {height}" width="100%" role="img" aria-label="{text(label)}" '
        f'style="max-width:{width}px">'
    )


def _x(i: int, n: int) -> float:
    span = WIDTH - LEFT - RIGHT
    return LEFT + (span / 2 if n == 1 else i * span / (n - 1))


def _format(value: float) -> str:
    if value == 0:
        return "0"
    if abs(value) >= 1000 or abs(value) < 0.01:
        return f"{value:.2g}"
    return f"{value:.3g}"


def _x_ticks(
    labels: Sequence[str], axis_name: str, place: Callable[[int, int], float]
) -> list[str]:
    n = len(labels)
    every = max(1, round(n / 10))
    out = []
    base = HEIGHT - BOTTOM
    for i in range(0, n, every):
        out.append(
            f'<text x="{place(i, n):.1f}" y="{base + 14}" font-size="10" '
            f'text-anchor="middle">{text(labels[i], 24)}</text>'
        )
    out.append(
        f'<text x="{(LEFT + WIDTH - RIGHT) / 2}" y="{HEIGHT - 6}" font-size="11" '
        f'text-anchor="middle" fill="#57606a">{text(axis_name)}</text>'
    )
    return out


def _y_axis(low: float, high: float, percent: bool) -> list[str]:
    out = []
    base, span = HEIGHT - BOTTOM, HEIGHT - BOTTOM - TOP
    for k in range(5):
        value = low + (high - low) * k / 4
        y = base - span * k / 4
        shown = f"{100 * value:.0f}%" if percent else _format(value)
        out.append(
            f'<line x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}" '
            f'stroke="{"#8c959f" if k == 0 else "#eaeef2"}"/>'
            f'<text x="{LEFT - 6}" y="{y + 3:.1f}" font-size="10" text-anchor="end">{shown}</text>'
        )
    return out


def _scale(series: Sequence[Series], fixed: tuple[float, float] | None) -> tuple[float, float]:
    if fixed is not None:
        return fixed
    values = [v for s in series for v in s.values if v is not None]
    if not values:
        return 0.0, 1.0
    low, high = min(0.0, min(values)), max(values)
    if 0 < high <= 1 and low == 0:
        return 0.0, 1.0  # rates and most fitness functions: the whole 0..1 range
    return low, _nice(high) if high > low else low + 1.0


def _nice(value: float) -> float:
    """The smallest of 1, 2, 2.5, 5 times a power of ten that is at least ``value``."""
    power = 10.0 ** math.floor(math.log10(value))
    return next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= value)


def line_chart(
    name: str,
    label: str,
    x_labels: Sequence[str],
    axis_name: str,
    series: Sequence[Series],
    *,
    band: tuple[Sequence[float | None], Sequence[float | None], str] | None = None,
    fixed: tuple[float, float] | None = None,
    percent: bool = False,
) -> str:
    """Lines over the x points; a None value breaks a line; ``band`` shades low..high."""
    low, high = _scale([*series, *([Series("", band[1], "")] if band else [])], fixed)
    n = len(x_labels)
    base, span = HEIGHT - BOTTOM, HEIGHT - BOTTOM - TOP

    def y(v: float) -> float:
        return base - span * (max(low, min(high, v)) - low) / (high - low)

    parts = [_open(name, label), *_y_axis(low, high, percent)]
    if band is not None:
        parts.extend(_band(band, n, y))
    for s in series:
        parts.append(_path(s, n, y))
    parts.extend(_x_ticks(x_labels, axis_name, _x))
    parts.append("</svg>")
    return "".join(parts)


def _band(
    band: tuple[Sequence[float | None], Sequence[float | None], str],
    n: int,
    y: Callable[[float], float],
) -> list[str]:
    lows, highs, colour = band
    points = [
        (i, lo, hi)
        for i, (lo, hi) in enumerate(zip(lows, highs, strict=True))
        if lo is not None and hi is not None
    ]
    if not points:
        return []
    top = " ".join(f"{_x(i, n):.1f},{y(hi):.1f}" for i, _, hi in points)
    bottom = " ".join(f"{_x(i, n):.1f},{y(lo):.1f}" for i, lo, _ in reversed(points))
    return [f'<polygon class="band" points="{top} {bottom}" fill="{colour}" fill-opacity="0.15"/>']


def _path(s: Series, n: int, y: Callable[[float], float]) -> str:
    commands, pen_down, dots = [], False, []
    for i, v in enumerate(s.values):
        if v is None:
            pen_down = False
            continue
        commands.append(f"{'L' if pen_down else 'M'}{_x(i, n):.1f} {y(v):.1f}")
        if n <= 40 or not pen_down:
            dots.append(f'<circle cx="{_x(i, n):.1f}" cy="{y(v):.1f}" r="2.5" fill="{s.colour}"/>')
        pen_down = True
    dash = f' stroke-dasharray="{s.dash}"' if s.dash else ""
    line = (
        f'<path class="series" d="{" ".join(commands)}" fill="none" stroke="{s.colour}" '
        f'stroke-width="{s.width}"{dash}><title>{text(s.name)}</title></path>'
    )
    return f'<g data-series="{text(s.name)}">{line}{"".join(dots)}</g>'


def stacked_bars(
    name: str,
    label: str,
    x_labels: Sequence[str],
    axis_name: str,
    stacks: Sequence[tuple[str, Sequence[int], str]],
) -> str:
    """One bar per x point, its parts stacked: counts of candidates by kind."""
    n = len(x_labels)
    totals = [sum(s[1][i] for s in stacks) for i in range(n)]
    high = _nice(float(max([1, *totals])))
    base, span = HEIGHT - BOTTOM, HEIGHT - BOTTOM - TOP
    slot = (WIDTH - LEFT - RIGHT) / max(1, n)
    bar = max(1.0, slot * 0.8)
    parts = [_open(name, label), *_y_axis(0.0, high, False)]

    def centre(i: int, _: int) -> float:
        return LEFT + slot * (i + 0.5)

    for i in range(n):
        height_so_far = 0.0
        for kind, counts, colour in stacks:
            if not counts[i]:
                continue
            h = span * counts[i] / high
            parts.append(
                f'<rect x="{centre(i, n) - bar / 2:.1f}" y="{base - height_so_far - h:.1f}" '
                f'width="{bar:.1f}" height="{h:.1f}" fill="{colour}">'
                f"<title>{text(x_labels[i], 24)}: {counts[i]} {text(kind)}</title></rect>"
            )
            height_so_far += h
    parts.extend(_x_ticks(x_labels, axis_name, centre))
    parts.append("</svg>")
    return "".join(parts)


HEAT_LEFT = 330
HEAT_ROW = 14


def heat_map(
    name: str,
    label: str,
    columns: Sequence[str],
    rows: Sequence[str],
    heldout: Sequence[bool],
    share: Sequence[Sequence[float | None]],
    axis_name: str,
) -> str:
    """Tests by x points: the share of candidates that passed each test (grey: none ran it)."""
    height = TOP + HEAT_ROW * len(rows) + BOTTOM
    cell = (WIDTH - HEAT_LEFT - RIGHT) / max(1, len(columns))
    parts = [_open(name, label, height)]
    for r, (row, hidden) in enumerate(zip(rows, heldout, strict=True)):
        y = TOP + r * HEAT_ROW
        shown = ("[held-out] " if hidden else "") + row
        parts.append(
            f'<text x="{HEAT_LEFT - 6}" y="{y + HEAT_ROW - 4}" font-size="10" '
            f'text-anchor="end">{text(shown, 56)}<title>{text(shown)}</title></text>'
        )
        for c, value in enumerate(share[r]):
            parts.append(
                f'<rect x="{HEAT_LEFT + c * cell:.1f}" y="{y}" width="{cell + 0.3:.1f}" '
                f'height="{HEAT_ROW - 1}" fill="{_green(value)}"/>'
            )
    base = TOP + HEAT_ROW * len(rows)
    every = max(1, round(len(columns) / 10))
    for c in range(0, len(columns), every):
        parts.append(
            f'<text x="{HEAT_LEFT + (c + 0.5) * cell:.1f}" y="{base + 14}" font-size="10" '
            f'text-anchor="middle">{text(columns[c], 24)}</text>'
        )
    parts.append(
        f'<text x="{(HEAT_LEFT + WIDTH - RIGHT) / 2}" y="{height - 6}" font-size="11" '
        f'text-anchor="middle" fill="#57606a">{text(axis_name)}</text></svg>'
    )
    return "".join(parts)


def _green(value: float | None) -> str:
    if value is None:
        return "#eaeef2"
    # White (nobody passes) to dark green (everybody does).
    r = round(255 - value * (255 - 26))
    g = round(255 - value * (255 - 127))
    b = round(255 - value * (255 - 55))
    return f"#{r:02x}{g:02x}{b:02x}"
