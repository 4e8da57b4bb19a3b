"""The judge wired through the Evaluator, ``scorewright score --judge`` and the OpenEvolve
companion, with real sandboxed runs and the real chat-completions server of
tests/judge_server.py; and the API key kept out of the sandbox."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_scorewright.evaluator import Evaluator
from pytest_scorewright.fitness import Fitness
from pytest_scorewright.judge import Judge
from pytest_scorewright.judge.judge_settings import KEY_ENV
from tests.judge_server import judge_server

pytestmark = pytest.mark.sandbox  # every test here forks real sandboxes

pytest.importorskip("openai")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "quickstart"
KEY = "sk-never-in-the-sandbox"


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)


def test_the_evaluator_judges_the_program_that_passes_and_not_the_one_that_fails() -> None:
    with judge_server("gullible") as server:
        judge = Judge(model="m", base_url=server.url)
        with Evaluator(EXAMPLE / "tests", heldout=EXAMPLE / "heldout", judge=judge) as ev:
            passing = ev.score(EXAMPLE / "reference" / "solution.py")
            failing = ev.score(EXAMPLE / "solution.py")
        assert len(server.requests) == 1
    assert passing.signal("pass_rate") == 1.0
    assert passing.signal("judge_score") == 1.0  # both functions annotated
    assert passing.extra["judge"]["ok"] is True
    assert (failing.signal("pass_rate") or 0.0) < 1.0
    assert failing.signal("judge_score") is None
    assert failing.extra["judge"]["reason"].startswith("not judged: pass rate")
    fitness = Fitness()
    best, worse = fitness.evaluate(passing).score, fitness.evaluate(failing).score
    assert best is not None
    assert worse is not None
    assert best > worse


def test_the_judges_key_never_reaches_the_sandbox(tmp_path: Path) -> None:
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_env.py").write_text(
        "import solution\n\n"
        "def test_no_key_here():\n"
        "    assert not [v for v in solution.environment().values() if 'sk-never' in v]\n"
    )
    candidate = tmp_path / "solution.py"
    candidate.write_text("import os\n\ndef environment():\n    return dict(os.environ)\n")
    with judge_server("rule") as server:
        judge = Judge(model="m", base_url=server.url)
        with Evaluator(tests, judge=judge) as ev:
            result = ev.score(candidate)
    assert result.signal("pass_rate") == 1.0, result.integrity
    assert result.extra["judge"]["ok"] is True  # the parent had the key, and used it
    assert server.requests[0].authorization == f"Bearer {KEY}"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_scorewright.cli", "score", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env={**os.environ, KEY_ENV: KEY},
    )


def test_score_with_judge_writes_the_judgement_into_the_result() -> None:
    with judge_server("rule", usage=(1000, 100)) as server:
        done = _cli(
            str(EXAMPLE / "reference" / "solution.py"),
            "--tests",
            str(EXAMPLE / "tests"),
            "--judge",
            "model=gpt-4o-mini",
            "--judge",
            f"base_url={server.url}",
        )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    signals = {s["name"]: s["value"] for s in data["signals"]}
    assert signals["judge_score"] == 1.0
    assert signals["judge_cost_usd"] == pytest.approx((1000 * 0.15 + 100 * 0.60) / 1e6)
    assert data["extra"]["judge"]["model"] == "gpt-4o-mini"
    assert data["extra"]["fitness"]["details"]["judge"] == pytest.approx(0.1)
    assert KEY not in done.stdout + done.stderr


def test_a_bad_judge_setting_is_a_one_line_usage_error() -> None:
    done = _cli(str(EXAMPLE / "solution.py"), "--tests", str(EXAMPLE / "tests"), "--judge", "x=1")
    assert done.returncode == 2
    assert "--judge: unknown key 'x'" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_the_openevolve_companion_passes_the_judge_on() -> None:
    pytest.importorskip("openevolve")
    from pytest_scorewright.openevolve import evaluator

    with judge_server("rule") as server:
        scorer = evaluator(
            EXAMPLE / "tests", module="solution", judge=Judge(model="m", base_url=server.url)
        )
        try:
            found = scorer.evaluate(str(EXAMPLE / "reference" / "solution.py"))
        finally:
            scorer.evaluator.close()
    metrics = found.metrics if hasattr(found, "metrics") else found
    assert metrics["scorewright_judge_score"] == 1.0
    assert metrics["combined_score"] == pytest.approx(1.1)
