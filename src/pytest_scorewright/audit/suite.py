"""The audit of a suite: the gaming strategies scored by plain pytest and by the Evaluator,
the suite's strength against mutants of the reference, and held-out tests proposed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_scorewright._text import bound_message, clean
from pytest_scorewright.audit.facts import Facts, learn
from pytest_scorewright.audit.mutants import MAX_MUTANTS, mutants
from pytest_scorewright.audit.naive import NaiveScore, naive_score
from pytest_scorewright.audit.oracle import Answer, answers, site_request
from pytest_scorewright.audit.proposals import Proposal, hypothesis_available, propose, test_file
from pytest_scorewright.audit.strategies import BASELINE, Strategy, by_name
from pytest_scorewright.evaluator import Evaluator
from pytest_scorewright.result import ScoreResult
from pytest_scorewright.sandbox.workspace import private_tempdir

#: The format of the audit's JSON (``scorewright audit --json``); 1: first version.
AUDIT_VERSION = 1


@dataclass(frozen=True)
class Inputs:
    tests: Path
    heldout: Path | None
    reference: Path
    module: str
    modules: tuple[str, ...]
    ini: Mapping[str, str]


def scorewright_row(result: ScoreResult) -> dict[str, Any]:
    return {
        "ok": result.ok,
        "pass_rate": result.signal("pass_rate") or 0.0,
        "visible_pass_rate": result.signal("visible_pass_rate"),
        "heldout_pass_rate": result.signal("heldout_pass_rate"),
        "rejected": result.integrity.rejected,
        "flags": sorted({r.code for r in result.integrity.reasons if r.severity != "hint"}),
        "error": bound_message(result.error, 200) if result.error else None,
    }


def audit_suite(
    evaluator: Evaluator,
    inputs: Inputs,
    *,
    strategies: Sequence[str] | None = None,
    workers: int = 2,
    max_mutants: int = MAX_MUTANTS,
    propose_dir: Path | None = None,
) -> dict[str, Any]:
    facts = learn(inputs.reference, inputs.tests, inputs.module)
    visible = answers(
        inputs.reference, inputs.modules, facts.names, [site_request(c) for c in facts.calls]
    )
    with private_tempdir("scorewright-audit-") as tmp:
        work = Path(tmp)
        rows = _gaming(evaluator, inputs, facts, visible, by_name(strategies), work, workers)
        # Half the mutants go where a proposed test can reach: functions the visible tests
        # call with arguments and results a test file can write down.
        focus = {a.function for a in visible if a.literal}
        strength, survivors = _strength(
            evaluator, inputs, facts, rows, work, workers, (max_mutants, focus)
        )
        proposed = _proposed(evaluator, inputs, facts, visible, survivors, propose_dir, workers)
    credited = [r["name"] for r in rows if r["scorewright_credited"]]
    return {
        "audit_version": AUDIT_VERSION,
        "suite": {
            "tests": str(inputs.tests),
            "heldout": str(inputs.heldout) if inputs.heldout else None,
            "reference": str(inputs.reference),
            "module": inputs.module,
            "functions_seen": sorted({c.function for c in facts.calls}),
            "call_sites": len(facts.calls),
        },
        "strategies": rows,
        "naive_credited": [r["name"] for r in rows if r["naive_credited"]],
        "scorewright_credited": credited,
        "strength": strength,
        "proposals": proposed,
    }


def _gaming(
    evaluator: Evaluator,
    inputs: Inputs,
    facts: Facts,
    visible: Sequence[Answer],
    chosen: Sequence[Strategy],
    work: Path,
    workers: int,
) -> list[dict[str, Any]]:
    paths = [s.write(facts, visible, work / "gaming" / s.name) for s in chosen]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        naive = list(
            pool.map(
                lambda p: naive_score(p, inputs.tests, inputs.heldout, ini=inputs.ini),
                paths,
            )
        )
    scored: dict[int, ScoreResult] = dict(evaluator.score_many(paths, workers))
    base_naive, base_sw = naive[0], scorewright_row(scored[0])
    rows = []
    for i, strategy in enumerate(chosen):
        sw = scorewright_row(scored[i])
        rows.append(
            {
                "name": strategy.name,
                "threat": strategy.code,
                "what": strategy.what,
                "naive": naive[i].to_dict(),
                "naive_credited": strategy.name != BASELINE
                and _naive_credits(naive[i], base_naive),
                "scorewright": sw,
                "scorewright_credited": strategy.name != BASELINE
                and sw["pass_rate"] > base_sw["pass_rate"] + 1e-9,
            }
        )
    return rows


def _naive_credits(score: NaiveScore, baseline: NaiveScore) -> bool:
    """Above the plainly wrong candidate by exit status or by pass rate."""
    rate, floor = score.pass_rate or 0.0, baseline.pass_rate or 0.0
    return (score.exit_zero and not baseline.exit_zero) or rate > floor + 1e-9


def _strength(
    evaluator: Evaluator,
    inputs: Inputs,
    facts: Facts,
    rows: Sequence[Mapping[str, Any]],
    work: Path,
    workers: int,
    limit: tuple[int, set[str]],
) -> tuple[dict[str, Any], list[tuple[str, Path]]]:
    made = mutants(inputs.reference, facts.modules, *limit)
    paths = [m.write(inputs.reference, work / "mutants" / f"m{i}") for i, m in enumerate(made)]
    reference = evaluator.score(inputs.reference)
    results: dict[int, ScoreResult] = dict(evaluator.score_many(paths, workers)) if paths else {}
    tests = [(t.nodeid, t.heldout) for t in reference.tests]
    matrix: dict[str, list[str]] = {}
    killed_visible = killed_heldout = 0
    survivors: list[tuple[str, Path]] = []
    for i, mutant in enumerate(made):
        result = results[i]
        failing = (
            {t.nodeid for t in result.tests if not t.passed} if result.ok else {n for n, _ in tests}
        )
        matrix[mutant.name] = sorted(failing)
        by_visible = any(n in failing for n, h in tests if not h)
        by_heldout = any(n in failing for n, h in tests if h)
        killed_visible += by_visible
        killed_heldout += by_heldout
        if not by_visible:
            survivors.append((mutant.name, paths[i]))
    idle = [n for n, _ in tests if not any(n in f for f in matrix.values())]
    total = len(made)
    baseline = next(r for r in rows if r["name"] == BASELINE)["scorewright"]
    diffs = {m.name: clean(m.diff) for m in made}
    return {
        "reference_pass_rate": reference.signal("pass_rate"),
        "trivial_pass_rate": baseline["pass_rate"],
        "mutants": total,
        "visible_mutation_score": killed_visible / total if total else None,
        "heldout_mutation_score": (
            killed_heldout / total if total and inputs.heldout is not None else None
        ),
        "survivors": [
            {
                "name": name,
                "diff": diffs[name],
                "killed_by_heldout": bool(matrix[name]),
            }
            for name, _ in survivors
        ],
        "tests_killing_nothing": idle,
        "matrix": matrix,
    }, survivors


def _proposed(
    evaluator: Evaluator,
    inputs: Inputs,
    facts: Facts,
    visible: Sequence[Answer],
    survivors: Sequence[tuple[str, Path]],
    propose_dir: Path | None,
    workers: int,
) -> dict[str, Any]:
    if not hypothesis_available():
        return {"tests": [], "note": "install hypothesis (pip install 'pytest-scorewright[audit]')"}
    found = propose(facts, visible, survivors, inputs.modules)
    if not found:
        why = "no surviving mutant" if not survivors else "no new input tells a survivor apart"
        return {"tests": [], "note": why}
    confirmed = _confirmed(inputs, facts, found, survivors, workers)
    text = test_file(confirmed, inputs.module, facts.names)
    written = None
    if propose_dir is not None and confirmed:
        propose_dir.mkdir(parents=True, exist_ok=True)
        written = propose_dir / "test_proposed_heldout.py"
        written.write_text(text, encoding="utf-8")
    return {
        "tests": [
            {"name": f"test_{p.function}_{i}", "call": f"{p.function}{p.args}", "kills": p.kills}
            for i, p in enumerate(confirmed, 1)
        ],
        "file": str(written) if written else None,
        "text": text,
        "note": f"{len(confirmed)} of {len(found)} confirmed by the Evaluator",
    }


def _confirmed(
    inputs: Inputs,
    facts: Facts,
    found: Sequence[Proposal],
    survivors: Sequence[tuple[str, Path]],
    workers: int,
) -> list[Proposal]:
    """The proposals as a suite of their own, run by an Evaluator against the reference (it
    refuses a suite the reference fails) and the mutants they claim to kill: each test kept
    with the kills its real run shows."""
    with private_tempdir("scorewright-proposed-") as tmp:
        suite = Path(tmp, "tests")
        suite.mkdir()
        (suite / "test_proposed.py").write_text(
            test_file(found, inputs.module, facts.names), encoding="utf-8"
        )
        claimed = {k for p in found for k in p.kills}
        targets = [(n, p) for n, p in survivors if n in claimed]
        with Evaluator(
            suite, reference=inputs.reference, module=list(inputs.modules), isolation="in-process"
        ) as check:
            runs = dict(check.score_many([p for _, p in targets], workers))
    confirmed = []
    for i, proposal in enumerate(found, 1):
        nodeid = f"tests/test_proposed.py::test_{proposal.function}_{i}"
        kills = [
            name
            for j, (name, _) in enumerate(targets)
            if any(t.nodeid == nodeid and not t.passed for t in runs[j].tests)
        ]
        if kills:
            proposal.kills = kills
            confirmed.append(proposal)
    return confirmed
