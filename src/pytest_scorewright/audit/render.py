"""The audit as terminal lines and as an HTML page in the run report's format (its page
frame and its escaping: every text passes ``svg.text``, cleaned and HTML-escaped)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_scorewright._text import clean
from pytest_scorewright.html_page import document, text

LOUD = "!!! scorewright CREDITS"
#: Tests that kill no mutant, named at most in the terminal (a real suite has hundreds).
SHOWN = 10


def _pct(value: object) -> str:
    return f"{100 * value:5.1f}%" if isinstance(value, (int, float)) else "    -"


def _naive_cell(naive: Mapping[str, Any]) -> str:
    status = naive["exit_status"]
    return f"exit {'-' if status is None else status:>2} {_pct(naive['pass_rate'])}"


def suite_lines(report: Mapping[str, Any]) -> list[str]:
    lines = ["scorewright audit: gaming strategies against this suite", ""]
    lines.append(f"  {'strategy':24} {'threat':6} {'plain pytest':16} {'scorewright':12} flags")
    for row in report["strategies"]:
        sw = row["scorewright"]
        mark_naive = "CREDITED" if row["naive_credited"] else ""
        mark_sw = "CREDITED" if row["scorewright_credited"] else ""
        lines.append(
            f"  {row['name']:24} {row['threat']:6} {_naive_cell(row['naive'])} {mark_naive:8} "
            f"{_pct(sw['pass_rate'])} {mark_sw:8} {clean(', '.join(sw['flags']))}"
        )
    lines.append("")
    naive, ours = report["naive_credited"], report["scorewright_credited"]
    lines.append(f"plain pytest credits {len(naive)} of {len(report['strategies']) - 1} strategies")
    if ours:
        lines.append(f"{LOUD} {len(ours)} STRATEGIES: {', '.join(ours)} !!!")
    else:
        tried = [r["name"] for r in report["strategies"][1:]]
        lines.append(
            f"scorewright credits none of the {len(tried)} strategies tried here "
            f"({', '.join(tried)}); a shape not listed was not tried"
        )
    lines += ["", *strength_lines(report["strength"]), "", *proposal_lines(report["proposals"])]
    return lines


def strength_lines(strength: Mapping[str, Any]) -> list[str]:
    lines = [
        "suite strength:",
        f"  reference passes {_pct(strength['reference_pass_rate']).strip()}; a plainly wrong "
        f"candidate {_pct(strength['trivial_pass_rate']).strip()}",
        f"  {strength['mutants']} mutants of the reference: visible tests kill "
        f"{_pct(strength['visible_mutation_score']).strip()}, held-out tests "
        f"{_pct(strength['heldout_mutation_score']).strip()}",
    ]
    for survivor in strength["survivors"]:
        caught = " (held-out tests kill it)" if survivor["killed_by_heldout"] else ""
        lines.append(f"  survives the visible tests: {survivor['name']}{caught}")
        lines += [f"      {line}" for line in survivor["diff"].splitlines()[2:]]
    idle = strength["tests_killing_nothing"]
    for nodeid in idle[:SHOWN]:
        lines.append(f"  kills no mutant: {clean(nodeid)}")
    if len(idle) > SHOWN:
        lines.append(f"  ... and {len(idle) - SHOWN} more tests that kill no mutant (--json)")
    return lines


def proposal_lines(proposals: Mapping[str, Any]) -> list[str]:
    lines = [f"proposed held-out tests: {len(proposals['tests'])} ({proposals['note']})"]
    for test in proposals["tests"]:
        lines.append(f"  {clean(test['call'])[:80]}  kills {', '.join(test['kills'])}")
    if proposals.get("file"):
        lines.append(
            f"  written to {proposals['file']}: review it, then move it to the held-out tests"
        )
    return lines


def evaluator_lines(report: Mapping[str, Any]) -> list[str]:
    lines = [
        f"scorewright audit: gaming strategies against {report['evaluator']} ({report['kind']})",
        f"  reference scores {_num(report['reference_score'])} ({report['reference_how']}); "
        f"plainly wrong {_num(report['baseline_score'])}",
        "",
        f"  {'strategy':24} {'threat':6} {'score':>8}",
    ]
    for row in report["strategies"]:
        mark = "CREDITED" if row["credited"] else ""
        lines.append(
            f"  {row['name']:24} {row['threat']:6} {_num(row['score']):>8} {mark:8} "
            f"{clean(row['how'])}"
        )
    credited = report["credited"]
    lines.append("")
    lines.append(
        f"{len(credited)} strategies raise this evaluator's score above a plainly wrong "
        f"candidate's: {', '.join(credited)}"
        if credited
        else "no strategy raises this evaluator's score above a plainly wrong candidate's"
    )
    return lines


def _num(value: object) -> str:
    return f"{value:.4f}" if isinstance(value, (int, float)) else "-"


def _table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    th = "".join(f"<th>{h}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{th}</tr>{body}</table>"


def _yes(flag: bool) -> str:
    return '<b style="color:#cf222e">credited</b>' if flag else "no"


def html_page(suite: Mapping[str, Any] | None, external: Mapping[str, Any] | None) -> str:
    body = ["<h1>scorewright audit</h1>"]
    if suite is not None:
        body += _suite_html(suite)
    if external is not None:
        body.append(f"<h2>Your evaluator: {text(external['evaluator'])}</h2>")
        body.append(
            _table(
                ["strategy", "threat", "score", "above plainly wrong"],
                [
                    [text(r["name"]), text(r["threat"]), _num(r["score"]), _yes(r["credited"])]
                    for r in external["strategies"]
                ],
            )
        )
    return document("scorewright audit", body)


def _suite_html(report: Mapping[str, Any]) -> list[str]:
    ours = report["scorewright_credited"]
    loud = (
        f'<p style="color:#cf222e;font-weight:bold">scorewright credits {len(ours)} '
        f"strategies: {text(', '.join(ours))}</p>"
        if ours
        else "<p class=note>scorewright credits none of the "
        f"{len(report['strategies']) - 1} strategies tried here (listed below); a shape not "
        "listed was not tried.</p>"
    )
    rows = [
        [
            text(r["name"]),
            text(r["threat"]),
            text(r["what"]),
            text(_naive_cell(r["naive"])),
            _yes(r["naive_credited"]),
            _pct(r["scorewright"]["pass_rate"]),
            _yes(r["scorewright_credited"]),
            text(", ".join(r["scorewright"]["flags"])),
        ]
        for r in report["strategies"]
    ]
    strength = report["strength"]
    survivors = "".join(
        f"<details><summary>{text(s['name'])}</summary><pre>{text(s['diff'], 2000)}</pre></details>"
        for s in strength["survivors"]
    )
    proposals = report["proposals"]
    return [
        "<h2>Gaming strategies against this suite</h2>",
        _table(
            ["strategy", "threat", "what", "plain pytest", "", "scorewright", "", "evidence"],
            rows,
        ),
        loud,
        "<h2>Suite strength</h2>",
        *(f"<p>{text(line.strip())}</p>" for line in strength_lines(strength)[1:3]),
        survivors,
        _idle_html(strength["tests_killing_nothing"]),
        "<h2>Proposed held-out tests</h2>",
        f"<p class=note>{text(proposals['note'])}</p>",
        f"<pre>{text(proposals.get('text') or '', 20000)}</pre>",
    ]


def _idle_html(idle: Sequence[str]) -> str:
    if not idle:
        return ""
    items = "".join(f"<li>{text(n)}</li>" for n in idle)
    return f"<details><summary>{len(idle)} tests kill no mutant</summary><ul>{items}</ul></details>"
