"""The judge's signal where it is read: the default fitness (anchored: capped, and only for
programs that pass), the OpenEvolve metrics and artifacts, Shinka's text feedback, the
leaderboard; against the real chat-completions server of tests/judge_server.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_scorewright import leaderboard
from pytest_scorewright.errors import ConfigError
from pytest_scorewright.fitness import JUDGE_WEIGHT_CAP, Fitness
from pytest_scorewright.judge import Judge
from pytest_scorewright.judge.attach import judged
from pytest_scorewright.judge.judge_settings import KEY_ENV
from pytest_scorewright.openevolve import artifacts, to_metrics
from pytest_scorewright.result import ScoreResult, TestRecord
from pytest_scorewright.results.measure import build_result
from pytest_scorewright.shinka import shinka_files
from tests.judge_server import judge_server

pytest.importorskip("openai")

#: Every function annotated: the rule judge scores it 1.0.
POLISHED = "def f(x: int) -> int:\n    return x + 1\n"
#: No function annotated: the rule judge scores it 0.0.
PLAIN = "def f(x):\n    return x + 1\n"


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test")


def _result(passed: int, failed: int) -> ScoreResult:
    records = [TestRecord(f"t.py::p{i}", "passed", "call", False, 0.1) for i in range(passed)]
    records += [TestRecord(f"t.py::f{i}", "failed", "call", False, 0.1) for i in range(failed)]
    return build_result(records, mode="evaluator", duration_s=1.0)


def _file(tmp_path: Path, name: str, source: str) -> Path:
    path = tmp_path / name / "solution.py"
    path.parent.mkdir()
    path.write_text(source)
    return path


@pytest.mark.parametrize("tests", [2, 5, 20, 100])
def test_a_failing_program_never_outranks_a_passing_one_under_default_weights(
    tmp_path: Path, tests: int
) -> None:
    with judge_server("rule") as server:
        # gate=None: the judge scores the failing program too, and scores it best.
        judge = Judge(model="m", base_url=server.url, gate=None)
        failing = judged(judge, _result(tests - 1, 1), _file(tmp_path, "failing", POLISHED))
        passing = judged(judge, _result(tests, 0), _file(tmp_path, "passing", PLAIN))
    assert (failing.signal("judge_score"), passing.signal("judge_score")) == (1.0, 0.0)
    fitness = Fitness()
    best, worse = fitness.evaluate(passing).score, fitness.evaluate(failing).score
    assert best is not None
    assert worse is not None
    assert best > worse
    rows = leaderboard.rank([("failing", failing), ("passing", passing)], fitness)
    assert [r.candidate for r in rows] == ["passing", "failing"]


def test_the_judge_re_ranks_passing_programs_by_at_most_its_capped_weight(
    tmp_path: Path,
) -> None:
    with judge_server("rule") as server:
        judge = Judge(model="m", base_url=server.url)
        plain = judged(judge, _result(4, 0), _file(tmp_path, "plain", PLAIN))
        polished = judged(judge, _result(4, 0), _file(tmp_path, "polished", POLISHED))
    fitness = Fitness()
    assert fitness.evaluate(plain).score == 1.0
    assert fitness.evaluate(polished).score == pytest.approx(1.1)
    assert fitness.evaluate(polished).details["judge"] == pytest.approx(0.1)
    capped = Fitness("weighted", {"judge_weight": JUDGE_WEIGHT_CAP})
    assert capped.evaluate(polished).score == pytest.approx(1 + JUDGE_WEIGHT_CAP)
    with pytest.raises(ConfigError, match=f"'judge_weight' must be at most {JUDGE_WEIGHT_CAP:g}"):
        Fitness("weighted", {"judge_weight": 0.5})


def test_openevolve_metrics_and_artifacts_carry_the_judgement(tmp_path: Path) -> None:
    with judge_server("rule") as server:
        judge = Judge(model="m", base_url=server.url)
        result = judged(judge, _result(3, 0), _file(tmp_path, "c", POLISHED))
    metrics = to_metrics(result)
    assert metrics["scorewright_judge_score"] == 1.0
    assert metrics["combined_score"] == pytest.approx(1.1)
    text = artifacts(result)["scorewright_judge"]
    assert text.startswith("code review score 1.00 of 1")
    assert "[judge's rationale " in text
    assert "100% annotated." in text


def test_shinka_text_feedback_carries_the_judges_rationale(tmp_path: Path) -> None:
    with judge_server("rule") as server:
        judge = Judge(model="m", base_url=server.url)
        result = judged(judge, _result(3, 0), _file(tmp_path, "c", POLISHED))
    metrics, correct = shinka_files(result)
    assert "scorewright_judge:\ncode review score 1.00" in metrics["text_feedback"]
    assert metrics["public"]["judge_score"] == 1.0
    assert correct["correct"] is True


def test_a_judge_that_failed_changes_no_metric_and_adds_no_feedback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_ENV)
    result = _result(3, 0)
    with judge_server("rule") as server:
        failed = judged(Judge(model="m", base_url=server.url), result, _file(tmp_path, "c", PLAIN))
    assert failed.extra["judge"]["reason"].startswith("no API key")
    assert to_metrics(failed) == to_metrics(result)
    assert artifacts(failed) == artifacts(result)
    assert shinka_files(failed)[0] == shinka_files(result)[0]


def test_the_leaderboard_shows_a_judge_column_when_a_result_has_one(tmp_path: Path) -> None:
    with judge_server("rule") as server:
        judge = Judge(model="m", base_url=server.url)
        result = judged(judge, _result(2, 0), _file(tmp_path, "c", POLISHED))
    rows = leaderboard.rank([("judged", result), ("not", _result(2, 0))], Fitness())
    table = leaderboard.table(rows)
    header = table.splitlines()[0].split()
    assert "judge" in header
    judged_line = next(line for line in table.splitlines() if "judged" in line)
    assert "1.00" in judged_line.split()
