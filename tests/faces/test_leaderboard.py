"""The leaderboard: ranking, flagged candidates marked not dropped, a self-contained page."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import ClassVar

import pytest

from pytest_scorewright.fitness import Fitness
from pytest_scorewright.leaderboard import page, rank, table
from pytest_scorewright.result import Policy, Reason, ScoreResult, TestRecord
from pytest_scorewright.results.measure import build_result


def _result(
    passed: int,
    total: int,
    *,
    flagged: bool = False,
    seconds: float = 1.0,
    policy: Policy = "default",
    hint: bool = False,
) -> ScoreResult:
    records = [
        TestRecord(f"t.py::t{i}", "passed" if i < passed else "failed", "call", False, 0.1)
        for i in range(total)
    ]
    reasons = [Reason("heldout_divergence", "x", "gaming")] if flagged else []
    reasons += [Reason("source_dynamic_code", "y", "hint")] if hint else []
    return build_result(
        records, mode="evaluator", duration_s=seconds, reasons=reasons, policy=policy
    )


def test_rows_are_ranked_by_fitness_and_flagged_ones_are_marked_not_dropped() -> None:
    results = [
        ("slow_perfect", _result(4, 4, seconds=5.0)),
        ("half", _result(2, 4)),
        ("gamer", _result(4, 4, flagged=True, policy="warn_only")),
        ("fast_perfect", _result(4, 4, seconds=1.0)),
    ]
    rows = rank(results, Fitness())
    assert [r.candidate for r in rows] == ["fast_perfect", "gamer", "slow_perfect", "half"]
    text = table(rows)
    assert re.search(r"^2\s+gamer\s+1\.000.*heldout_divergence$", text, re.M), text
    assert "half" in text


def test_by_default_a_gaming_result_ranks_with_the_reject_value_and_hints_are_not_flags() -> None:
    results = [
        ("gamer", _result(4, 4, flagged=True)),
        ("honest_with_a_hint", _result(3, 4, hint=True)),
    ]
    rows = rank(results, Fitness())
    assert [(r.candidate, r.fitness) for r in rows] == [
        ("honest_with_a_hint", 0.75),
        ("gamer", 0.0),
    ]
    text = table(rows)
    assert re.search(r"^2\s+gamer\s+0\.000.*REJECTED heldout_divergence$", text, re.M), text
    assert re.search(r"^1\s+honest_with_a_hint\s.*-$", text, re.M), text


def test_time_penalty_orders_equal_pass_rates() -> None:
    fitness = Fitness("weighted", {"time_penalty": 1.0})
    rows = rank([("a", _result(1, 1, seconds=0.1)), ("b", _result(1, 1, seconds=9.0))], fitness)
    assert [(r.candidate, r.fitness) for r in rows] == [("a", 0.9), ("b", 0.0)]


def test_the_page_is_self_contained_and_escapes_names() -> None:
    rows = rank([("<script>alert(1)</script>", _result(1, 2, flagged=True))], Fitness())
    html = page(rows, "weighted")
    assert "<script>alert" not in html
    assert "&lt;script&gt;" in html
    assert not re.search(r'(src|href)="(https?:)?//', html)
    assert "<svg" in html
    assert 'class="flagged"' in html


@pytest.mark.slow  # starts a process, or takes seconds of CPU
def test_the_cli_writes_the_table_and_the_page(tmp_path: Path) -> None:
    paths = []
    for name, result in (("good", _result(3, 3)), ("bad", _result(0, 3))):
        paths.append(str(result.write(tmp_path / f"{name}.json")))
    html = tmp_path / "board.html"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest_scorewright.cli",
            "leaderboard",
            *paths,
            "--html",
            str(html),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[2].split()[:3] == ["1", "good", "1.000"]
    assert html.read_text().startswith("<!DOCTYPE html>")
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest_scorewright.cli",
            "leaderboard",
            str(tmp_path / "nope.json"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 2
    assert bad.stderr.startswith("scorewright: error: cannot read")


class Picky:
    """A custom fitness that fails on weak candidates (to test failure ranking)."""

    name = "picky"
    options: ClassVar[dict[str, object]] = {}

    def score(self, metrics: dict[str, float], config: object, context: object) -> dict[str, float]:
        if metrics["pass_rate"] < 0.5:
            raise ValueError("too weak to judge")
        return {"score": metrics["pass_rate"]}


def test_a_failed_fitness_ranks_last_with_its_error() -> None:
    fitness = Fitness("tests.faces.test_leaderboard:Picky")
    rows = rank([("weak", _result(0, 2)), ("fine", _result(2, 2))], fitness)
    assert [(r.candidate, r.fitness) for r in rows] == [("fine", 1.0), ("weak", None)]
    text = table(rows)
    assert "weak: fitness error: ValueError: too weak to judge" in text
    assert re.search(r"^2\s+weak\s+error", text, re.M)


def test_a_result_not_scored_for_a_reason_of_ours_ranks_last_without_a_score(
    tmp_path: Path,
) -> None:
    from pytest_scorewright.limits import Limits
    from pytest_scorewright.scoring.assemble import infrastructure_result

    # The result the Evaluator returns when its warm parent died during the candidate's runs.
    lost = infrastructure_result(
        tmp_path / "lost.py",
        "the warm parent process died during this run",
        1.5,
        limits=Limits(),
    )
    rows = rank([("lost", lost), ("weak", _result(0, 2)), ("fine", _result(2, 2))], Fitness())
    assert [(r.candidate, r.fitness) for r in rows] == [
        ("fine", 1.0),
        ("weak", 0.0),
        ("lost", None),
    ]
    assert rows[2].infrastructure
    text = table(rows)
    assert re.search(r"^3\s+lost\s+not scored", text, re.M), text
    assert "lost: not scored, for a reason of ours or the machine's (score it again): " in text
    assert "the warm parent process died" in text
