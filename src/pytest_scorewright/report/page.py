"""The run report as one self-contained HTML file: inline CSS and SVG, no script, and a
Content-Security-Policy that forbids fetching anything, so it reads the same offline and in a
mail attachment. Every text from result files passes svg.text (cleaned, HTML-escaped).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest_scorewright.report.svg as svg
from pytest_scorewright.html_page import document, text
from pytest_scorewright.report.records import Candidate
from pytest_scorewright.report.status import BROKEN, COLOURS, STATUSES
from pytest_scorewright.report.svg import Series

#: At most this many speed and objective signals get a chart (the CSV has every one).
MAX_SIGNAL_CHARTS = 8
_TROUBLE = (*BROKEN, "no fitness", "not scored")
_CODE_COLOURS = ("#cf222e", "#bc4c00", "#bf8700", "#8250df", "#0969da", "#1a7f37", "#57606a")


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _num(value: float | None, fmt: str = "{:.3f}") -> str:
    return "-" if value is None else fmt.format(value)


def _legend(items: Sequence[tuple[str, str]]) -> str:
    spans = "".join(
        f'<span><i class="swatch" style="background:{colour}"></i>{text(name)}</span>'
        for name, colour in items
    )
    return f'<p class="legend">{spans}</p>'


def status_pill(status: str) -> str:
    light = " light" if status in ("not scored", "partial") else ""
    colour = COLOURS.get(status, "#57606a")
    return f'<span class="status{light}" style="background:{colour}">{text(status)}</span>'


def _cards(candidates: Sequence[Candidate], figures: Mapping[str, Any]) -> str:
    totals = figures["status_totals"]
    scored = [c for c in candidates if c.fitness is not None]
    best = max(scored, key=lambda c: c.fitness or 0.0, default=None)
    confirmed = [c.fitness for c in candidates if c.confirmed and c.fitness is not None]
    cost = figures["cost"].get("cost_usd_total")
    cards = [
        ("results", str(len(candidates))),
        ("best fitness", "-" if best is None else f"{best.fitness:.3f} ({text(best.label, 24)})"),
        ("best confirmed", f"{max(confirmed):.3f}" if confirmed else "-"),
        ("flagged", str(sum(bool(c.flags) for c in candidates))),
        ("rejected", str(totals.get("rejected", 0))),
        ("errors and hangs", str(sum(totals.get(s, 0) for s in BROKEN))),
    ]
    if cost:
        cards.append(("cost", f"${cost[-1]:.2f}"))
    return (
        '<div class="cards">'
        + "".join(f'<div class="card">{name}<b>{value}</b></div>' for name, value in cards)
        + "</div>"
    )


def _over(figures: Mapping[str, Any]) -> str:
    """How a chart's title says what its x axis is: generations only where a loop recorded
    them; a batch's results come in the order they were read (which is not a generation)."""
    return "over generations" if figures["axis"]["kind"] == "generation" else "in the order read"


def _axis_name(figures: Mapping[str, Any]) -> str:
    if figures["axis"]["kind"] == "generation":
        return "generation"
    return "results in the order read (no generation recorded: --meta generation=N)"


def _fitness(figures: Mapping[str, Any], labels: Sequence[str], axis_name: str) -> str:
    f = figures["fitness"]
    series = [
        Series("best found so far", f["best_found"], "#0969da", width=2.5),
        Series("best in generation", f["best"], "#54aeff", width=1.2),
        Series("median", f["median"], "#57606a", width=1.5),
    ]
    legend = [
        ("best found so far", "#0969da"),
        ("best in generation", "#54aeff"),
        ("median", "#57606a"),
        ("10th-90th percentile", "#b6e3ff"),
    ]
    if "best_confirmed" in f:
        series.append(Series("best confirmed so far", f["best_confirmed"], "#1a7f37", "6,3", 2.5))
        legend.append(("best confirmed so far", "#1a7f37"))
    chart = svg.line_chart(
        "fitness",
        f"fitness {_over(figures)}",
        labels,
        axis_name,
        series,
        band=(f["p10"], f["p90"], "#0969da"),
    )
    return f"<h2>Fitness {_over(figures)}</h2>" + chart + _legend(legend)


def _rates(figures: Mapping[str, Any], labels: Sequence[str], axis_name: str) -> str:
    r = figures["pass_rates"]
    if all(v is None for v in r["visible"]) and all(v is None for v in r["heldout"]):
        return (
            "<h2>Visible and held-out pass rates</h2>"
            "<p class=note>No pass rates in these results.</p>"
        )
    # The visible line wide and beneath, the held-out one dashed on top: where the two are
    # equal (a candidate that generalises), both stay in view.
    series = [
        Series("visible pass rate (mean)", r["visible"], "#1a7f37", width=4.0),
        Series("held-out pass rate (mean)", r["heldout"], "#8250df", "6,4", 1.6),
        Series("divergence (mean)", r["divergence"], "#cf222e", "5,3"),
        Series("divergence (largest)", r["divergence_max"], "#ff8182", "2,3", 1.2),
    ]
    chart = svg.line_chart(
        "pass_rates",
        "visible and held-out pass rates and divergence",
        labels,
        axis_name,
        series,
        fixed=(-1.0, 1.0) if any(v is not None and v < 0 for v in r["divergence"]) else (0.0, 1.0),
        percent=True,
    )
    note = (
        "<p class=note>Divergence is the visible minus the held-out pass rate: a search "
        "that learns the visible tests rather than the task drives it up.</p>"
    )
    return (
        "<h2>Visible and held-out pass rates</h2>"
        + chart
        + _legend([(s.name, s.colour) for s in series])
        + note
    )


def _bars(
    name: str,
    title: str,
    counts: Mapping[str, Sequence[int]],
    labels: Sequence[str],
    axis_name: str,
    colours: Mapping[str, str],
    empty: str,
) -> str:
    if not counts:
        return f"<h2>{title}</h2><p class=note>{empty}</p>"
    stacks = [(kind, values, colours[kind]) for kind, values in counts.items()]
    chart = svg.stacked_bars(name, title, labels, axis_name, stacks)
    return f"<h2>{title}</h2>" + chart + _legend([(k, c) for k, _, c in stacks])


def _integrity(figures: Mapping[str, Any], labels: Sequence[str], axis_name: str) -> str:
    counts = figures["integrity"]
    colours = {
        code: "#6e7781" if code == "(rejected)" else _CODE_COLOURS[i % len(_CODE_COLOURS)]
        for i, code in enumerate(counts)
    }
    section = _bars(
        "integrity",
        f"Flagged and rejected candidates {_over(figures)}",
        counts,
        labels,
        axis_name,
        colours,
        "No candidate was flagged: no tamper or gaming evidence in these results.",
    )
    seen = figures["integrity_first_seen"]
    if seen:
        items = "".join(
            f"<li><code>{text(code)}</code>: first at {text(axis_name.split(' ')[0])} "
            f"{text(where)}, {sum(counts[code])} candidates with it as their strongest</li>"
            for code, where in seen.items()
        )
        section += f"<p class=note>When each kind of evidence first appeared:</p><ul>{items}</ul>"
    return section


def _statuses(figures: Mapping[str, Any], labels: Sequence[str], axis_name: str) -> str:
    # Only the programs that did not run to a measurement: next to the many that did, a
    # few syntax errors and hangs would be a sliver (the totals are in the cards above).
    counts = {s: v for s, v in figures["statuses"].items() if s in _TROUBLE}
    return _bars(
        "statuses",
        f"Errors and hangs {_over(figures)}",
        counts,
        labels,
        axis_name,
        COLOURS,
        "No syntax error, import error, crash or hang, and every result has a fitness.",
    )


def _heat(figures: Mapping[str, Any], axis_name: str) -> str:
    h = figures["heat_map"]
    title = "<h2>Per-test heat map: the share of candidates that passed each test</h2>"
    if not h:
        return title + (
            "<p class=note>No per-test records in these results (a loop's own "
            "files keep none: score-many --jsonl does).</p>"
        )
    chart = svg.heat_map(
        "heat_map",
        "per-test heat map",
        h["columns"],
        h["tests"],
        h["heldout"],
        h["share"],
        axis_name,
    )
    shown = (
        f"{len(h['tests'])} of {h['tests_total']} tests, evenly spread"
        if len(h["tests"]) < h["tests_total"]
        else f"all {h['tests_total']} tests"
    )
    notes = [
        f"<p class=note>{shown}, in the order the search first solved them; white: no "
        "candidate passed, dark green: all did, grey: none ran it.</p>"
    ]
    if h["unsolved_count"]:
        names = "".join(f"<li><code>{text(n)}</code></li>" for n in h["unsolved"])
        more = h["unsolved_count"] - len(h["unsolved"])
        notes.append(
            f"<p><b>{h['unsolved_count']} tests no candidate ever passed:</b></p>"
            f"<ul>{names}</ul>" + (f"<p class=note>and {more} more</p>" if more > 0 else "")
        )
    else:
        notes.append("<p class=note>Every test was passed by some candidate.</p>")
    return title + chart + "".join(notes)


def _signals(figures: Mapping[str, Any], labels: Sequence[str], axis_name: str) -> str:
    found = figures["signals"]
    title = "<h2>Speed and objectives</h2>"
    if not found:
        return title + "<p class=note>No speed, objective or other numeric signal measured.</p>"
    parts = [title]
    for name, data in list(found.items())[:MAX_SIGNAL_CHARTS]:
        direction = {True: "higher is better", False: "lower is better"}.get(
            data["higher_is_better"], "no better direction"
        )
        series = [
            Series(f"{name}: best", data["best"], "#0969da"),
            Series(f"{name}: median", data["median"], "#57606a", "4,3"),
        ]
        parts.append(f"<h3><code>{text(name)}</code> <small>({direction})</small></h3>")
        parts.append(svg.line_chart(f"signal-{text(name)}", name, labels, axis_name, series))
        parts.append(_legend([("best", "#0969da"), ("median", "#57606a")]))
    if len(found) > MAX_SIGNAL_CHARTS:
        parts.append(
            f"<p class=note>{len(found) - MAX_SIGNAL_CHARTS} more signals in the CSV "
            "and --json.</p>"
        )
    return "".join(parts)


def _cost(figures: Mapping[str, Any], labels: Sequence[str], axis_name: str) -> str:
    cost = figures["cost"]
    title = f"<h2>Cost {_over(figures)}</h2>"
    name = "cost_usd" if "cost_usd" in cost else "tokens" if "tokens" in cost else None
    if name is None:
        return title + (
            "<p class=note>No cost recorded (--meta tokens_input=N "
            "tokens_output=N model=NAME, with a price table).</p>"
        )
    unit = "USD" if name == "cost_usd" else "tokens"
    series = [
        Series(f"cumulative {unit}", cost[f"{name}_total"], "#bc4c00"),
        Series(f"{unit} per point", cost[name], "#bf8700", "4,3", 1.2),
    ]
    return (
        title
        + svg.line_chart("cost", f"cost {_over(figures)}", labels, axis_name, series)
        + _legend([(s.name, s.colour) for s in series])
    )


def _top(candidates: Sequence[Candidate], order: Sequence[int], total: int) -> str:
    head = (
        "<tr><th>rank</th><th>candidate</th><th>gen.</th><th>status</th><th>fitness</th>"
        "<th>visible</th><th>held-out</th><th>diverg.</th><th>flags</th></tr>"
    )
    rows = []
    for rank, i in enumerate(order, start=1):
        c = candidates[i]
        fitness = _num(c.fitness) + (" (confirmed)" if c.confirmed else "")
        rows.append(
            f'<tr><td>{rank}</td><td><a href="#c{i}">{text(c.label, 40)}</a></td>'
            f"<td>{'-' if c.generation is None else c.generation}</td>"
            f"<td>{status_pill(c.status)}</td><td>{fitness}</td><td>{_pct(c.visible)}</td>"
            f"<td>{_pct(c.heldout)}</td><td>{_num(c.divergence, '{:+.2f}')}</td>"
            f"<td>{text(', '.join(c.flags[:3]) + (' …' if len(c.flags) > 3 else ''))}</td></tr>"
        )
    return (
        f"<h2>Top {len(order)} of {total}</h2><table><thead>{head}</thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
    )


def _details(candidates: Sequence[Candidate], order: Sequence[int]) -> str:
    parts = ["<h2>Details of the top results</h2>"]
    for rank, i in enumerate(order, start=1):
        c = candidates[i]
        facts = [f"source <code>{text(c.source)}</code>"]
        if c.parent:
            facts.append(f"parent <code>{text(c.parent, 40)}</code>")
        if c.island is not None:
            facts.append(f"island {c.island}")
        facts.append(f"pass rate {_pct(c.pass_rate)}")
        body = [f"<p>{'; '.join(facts)}</p>"]
        if c.flags:
            body.append(
                "<p>flags: " + ", ".join(f"<code>{text(f)}</code>" for f in c.flags) + "</p>"
            )
        if c.error:
            body.append(f"<p>error:</p><pre>{text(c.error, 400)}</pre>")
        if c.failing:
            more = c.failing_count - len(c.failing)
            body.append(
                f"<p>{c.failing_count} tests not passed:</p><pre>"
                + "\n".join(text(f) for f in c.failing)
                + (f"\n… and {more} more" if more > 0 else "")
                + "</pre>"
            )
        parts.append(
            f'<details id="c{i}"><summary>#{rank} {text(c.label, 60)} '
            f"{status_pill(c.status)} {_num(c.fitness)}</summary>{''.join(body)}</details>"
        )
    return "".join(parts)


def page(
    candidates: Sequence[Candidate],
    figures: Mapping[str, Any],
    order: Sequence[int],
    *,
    fitness_name: str,
    sources: Sequence[str],
) -> str:
    labels = figures["axis"]["labels"]
    axis_name = _axis_name(figures)
    notes = list(figures["notes"])
    if figures["left_out_without_generation"]:
        notes.append(
            f"{figures['left_out_without_generation']} results without a generation "
            "are in the table and totals, not in the charts over generations"
        )
    shown = ", ".join(text(s, 80) for s in sources[:5]) + (" …" if len(sources) > 5 else "")
    body = [
        "<h1>scorewright run report</h1>",
        f"<p class=meta>{len(candidates)} results from {shown}; fitness "
        f"<code>{text(fitness_name)}</code>; {len(labels)} points on the x axis "
        f"({text(axis_name.split(' (')[0])}).</p>",
        *(f"<p class=note>{text(n)}</p>" for n in notes),
        _cards(candidates, figures),
        _fitness(figures, labels, axis_name),
        _rates(figures, labels, axis_name),
        _integrity(figures, labels, axis_name),
        _statuses(figures, labels, axis_name),
        _heat(figures, axis_name),
        _signals(figures, labels, axis_name),
        _cost(figures, labels, axis_name),
        _top(candidates, order, len(candidates)),
        _details(candidates, order),
        f"<p class=note>Statuses: {', '.join(STATUSES)} (docs/report.md).</p>",
    ]
    return document("scorewright run report", body)
