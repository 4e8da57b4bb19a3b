"""The OpenEvolve companion, through openevolve's real Evaluator (no LLM)."""

from __future__ import annotations

import asyncio
import math
import os
import shutil
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_scorewright.errors import ScorewrightError
from pytest_scorewright.openevolve import artifacts, to_metrics
from pytest_scorewright.result import Reason, ScoreResult, TestRecord
from pytest_scorewright.results.measure import build_result
from tests.conftest import slow_in_first_call

pytestmark = pytest.mark.sandbox  # every test here forks real sandboxes

openevolve_config = pytest.importorskip("openevolve.config")
openevolve_evaluator = pytest.importorskip("openevolve.evaluator")

ROOT = Path(__file__).resolve().parents[2]
TASK = ROOT / "examples" / "quickstart"
EXAMPLE = ROOT / "examples" / "openevolve"

PROGRAMS = {
    "reference": (TASK / "reference" / "solution.py").read_text(),
    "partial": (TASK / "solution.py").read_text(),
    "wrong": (EXAMPLE / "initial_program.py").read_text(),
    "hang": "def encode(text):\n    while True:\n        pass\n\ndecode = encode\n",
    "os_exit": "import os\nos._exit(0)\n",
}


@pytest.fixture(scope="module")
def evaluation_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("oe") / "evaluate_quick.py"
    path.write_text(
        "from pytest_scorewright.openevolve import evaluator\n"
        f"_ev = evaluator({str(TASK / 'tests')!r}, heldout={str(TASK / 'heldout')!r},\n"
        f"               reference={str(TASK / 'reference')!r}, timeout=8,\n"
        "               dedupe=False)\n"  # the same programs are scored again on purpose
        "evaluate, evaluate_stage1, evaluate_stage2 = "
        "_ev.evaluate, _ev.evaluate_stage1, _ev.evaluate_stage2\n"
    )
    return path


def _run(
    evaluation_file: Path, cascade: bool
) -> dict[str, tuple[dict[str, Any], dict[str, Any], float]]:
    config = openevolve_config.load_config(str(EXAMPLE / "config.yaml"))
    config.evaluator.cascade_evaluation = cascade
    evaluator = openevolve_evaluator.Evaluator(config.evaluator, str(evaluation_file))
    found = {}
    for name, code in PROGRAMS.items():
        started = time.monotonic()
        metrics = asyncio.run(evaluator.evaluate_program(code, name))
        found[name] = (
            metrics,
            evaluator.get_pending_artifacts(name) or {},
            time.monotonic() - started,
        )
    return found


@pytest.mark.parametrize("cascade", [True, False], ids=["cascade", "direct"])
def test_real_openevolve_ranks_reference_over_partial_over_wrong(
    evaluation_file: Path, cascade: bool
) -> None:
    found = _run(evaluation_file, cascade)
    score = {name: float(metrics["combined_score"]) for name, (metrics, _, _) in found.items()}
    assert score["reference"] > score["partial"] > score["wrong"], score
    for name in ("hang", "os_exit"):
        assert score[name] == 0.0, (name, found[name][0])
        assert found[name][2] < 40, (name, found[name][2])
    for name, (metrics, found_artifacts, _) in found.items():
        assert all(type(v) is float and math.isfinite(v) for v in metrics.values()), name
        text = " ".join(str(v) for v in found_artifacts.values())
        assert "test_heldout" not in text, (name, text)
        assert "negative_count" not in text, (name, text)
    failing = found["wrong"][1]["scorewright_failing_tests"]
    assert "tests/test_visible.py::test_runs" in failing


def test_the_bundled_example_config_is_accepted() -> None:
    config = openevolve_config.load_config(str(EXAMPLE / "config.yaml"))
    assert config.evaluator.cascade_evaluation is True


def test_to_metrics_is_pure_and_plain() -> None:
    records = [
        TestRecord("t.py::a", "passed", "call", False, 0.1),
        TestRecord("h.py::secret_case", "failed", "call", True, 0.1, "expected 42"),
    ]
    result = build_result(records, mode="evaluator", duration_s=1.0)
    metrics = to_metrics(result.to_json())
    assert metrics == to_metrics(result)
    assert all(type(v) is float for v in metrics.values())
    assert metrics["combined_score"] == 0.5
    assert metrics["scorewright_heldout_divergence"] == 1.0
    found = artifacts(result)
    assert found == {"scorewright_heldout": "0/1 held-out tests passed"}
    assert isinstance(ScoreResult.from_json(result.to_json()), ScoreResult)


# The red team's: after one hostile program every later program of a long-lived OpenEvolve
# evaluator scored 0 (the shared warm parent was dead). Frames into the result pipe: a lone
# surrogate, a NaN, nesting 100,000 deep, ids that are not strings.
HOSTILE = (
    "import os, struct\n"
    "bodies = [\n"
    '    b\'{"type": "finding", "code": "x", "detail": "\\\\udc80"}\',\n'
    '    b\'{"type": "report", "duration": NaN}\',\n'
    "    b'{\"type\": \"x\", \"v\": ' + b'[' * 100000 + b']' * 100000 + b'}',\n"
    '    b\'{"type": "collected", "ids": [[1], 2], "heldout": []}\',\n'
    "]\n"
    "for body in bodies:\n"
    "    for name in os.listdir('/proc/self/fd'):\n"
    "        if int(name) > 2:\n"
    "            try:\n"
    "                os.write(int(name), struct.pack('>I', len(body)) + body)\n"
    "            except OSError:\n"
    "                pass\n"
) + PROGRAMS["reference"]


def test_a_long_lived_openevolve_evaluator_is_as_good_after_a_hostile_program(
    evaluation_file: Path,
) -> None:

    config = openevolve_config.load_config(str(EXAMPLE / "config.yaml"))
    evaluator = openevolve_evaluator.Evaluator(config.evaluator, str(evaluation_file))

    def combined(code: str, name: str) -> float:
        metrics = asyncio.run(evaluator.evaluate_program(code, name))
        assert all(type(v) is float and math.isfinite(v) for v in metrics.values()), metrics
        return float(metrics["combined_score"])

    honest = PROGRAMS["reference"]
    before = combined(honest, "honest-1")
    assert before > 0.5
    hostile = combined(HOSTILE, "hostile")
    assert hostile < before
    found = evaluator.get_pending_artifacts("hostile") or {}
    assert "channel" in str(found.get("scorewright_integrity", "")), found
    assert combined(honest, "honest-2") == before
    # And a warm parent that dies between programs (the OOM killer, say) is started again.
    core = evaluator.evaluate_function.__self__.evaluator  # this evaluation file's
    assert core._runner.warm is not None
    os.kill(core._runner.warm._proc.pid, signal.SIGKILL)
    core._runner.warm._proc.wait()
    assert combined(honest, "honest-3") == before
    assert core._runner.warm.restarts == 1


def test_a_tampered_result_scores_zero_and_says_why_without_listing_passes_as_failures() -> None:
    records = [TestRecord("t.py::a", "passed", "call", False, 0.1)]
    reasons = [Reason("pytest_tampered", "TestReport.from_item_and_call was replaced", "tamper")]
    result = build_result(records, mode="evaluator", duration_s=1.0, reasons=reasons)
    metrics = to_metrics(result)
    assert metrics["combined_score"] == 0.0
    assert (metrics["scorewright_rejected"], metrics["scorewright_tampered"]) == (1.0, 1.0)
    found = artifacts(result)
    assert "scorewright_failing_tests" not in found  # it passed; it is just not credited
    assert "\npytest_tampered [tamper]: " in found["scorewright_integrity"]
    assert "no test was credited" in found["scorewright_rejected"]


SLOW = slow_in_first_call(PROGRAMS["reference"], "encode", 3)


def _killing_warm_parents(tests: Path, kills: int) -> threading.Thread:
    """Kill the adapter's warm parent ``kills`` times, each while a program's runs are alive
    (as the OOM killer would): an error of ours, not the program's."""
    from pytest_scorewright import openevolve as adapter
    from tests.conftest import sandbox_processes

    def kill() -> None:
        for _ in range(kills):
            deadline = time.monotonic() + 60
            seen: dict[int, float] = {}
            while time.monotonic() < deadline:
                now = time.monotonic()
                seen = {pid: seen.get(pid, now) for pid in sandbox_processes(os.getpid())}
                if seen and now - min(seen.values()) > 1.0:  # the slow program's runs
                    break
                time.sleep(0.02)
            core = next(e.evaluator for e in adapter._cache.values() if e.evaluator.tests == tests)
            assert core._runner.warm is not None
            os.kill(core._runner.warm._proc.pid, signal.SIGKILL)
            while sandbox_processes(os.getpid()) and time.monotonic() < deadline:
                time.sleep(0.02)

    killer = threading.Thread(target=kill)
    killer.start()
    return killer


def _slow_evaluation_file(tmp_path: Path, retries: int) -> Path:
    # A task directory of its own, so the killer finds this file's evaluator and no other.
    task = tmp_path / "task"
    shutil.copytree(TASK, task)
    path = tmp_path / "evaluate_slow.py"
    path.write_text(
        "from pytest_scorewright.openevolve import evaluator\n"
        f"_ev = evaluator({str(task / 'tests')!r}, heldout={str(task / 'heldout')!r},\n"
        f"               reference={str(task / 'reference')!r}, timeout=20, retries={retries},\n"
        "               test_timeout=10, dedupe=False)\n"  # first call sleeps 3 s: no hang
        "evaluate, evaluate_stage1, evaluate_stage2 = "
        "_ev.evaluate, _ev.evaluate_stage1, _ev.evaluate_stage2\n"
    )
    return path


def test_an_error_of_ours_is_an_exception_openevolve_retries_not_a_zero(tmp_path: Path) -> None:
    evaluation_file = _slow_evaluation_file(tmp_path, retries=0)
    config = openevolve_config.load_config(str(EXAMPLE / "config.yaml"))
    config.evaluator.cascade_evaluation = False
    config.evaluator.max_retries = 1
    config.evaluator.timeout = 60
    evaluator = openevolve_evaluator.Evaluator(config.evaluator, str(evaluation_file))
    killer = _killing_warm_parents((tmp_path / "task" / "tests").resolve(), kills=1)
    metrics = asyncio.run(evaluator.evaluate_program(SLOW, "slow"))
    killer.join()
    # The first attempt raised; openevolve's own retry scored the program in full.
    assert metrics["combined_score"] == 1.0


def test_in_cascade_mode_an_error_of_ours_is_retried_by_the_adapter_then_an_error(
    tmp_path: Path,
) -> None:
    evaluation_file = _slow_evaluation_file(tmp_path, retries=1)
    config = openevolve_config.load_config(str(EXAMPLE / "config.yaml"))
    config.evaluator.cascade_evaluation = True
    config.evaluator.timeout = 60
    evaluator = openevolve_evaluator.Evaluator(config.evaluator, str(evaluation_file))
    tests = (tmp_path / "task" / "tests").resolve()
    # Once: the adapter scores it again, openevolve never sees it.
    killer = _killing_warm_parents(tests, kills=1)
    metrics = asyncio.run(evaluator.evaluate_program(SLOW, "once"))
    killer.join()
    assert metrics["combined_score"] == 1.0
    # On every attempt: openevolve's cascade records the exception as an error (it does not
    # retry a stage): an "error" metric and no combined_score, never a score of 0.0 from us.
    killer = _killing_warm_parents(tests, kills=2)
    metrics = asyncio.run(evaluator.evaluate_program(SLOW, "always"))
    killer.join()
    assert "combined_score" not in metrics
    assert metrics["error"] == 0.0
    found = evaluator.get_pending_artifacts("always") or {}
    assert "scorewright: not scored, for a reason of ours" in str(found.get("stderr", ""))


def test_a_budget_longer_than_the_loops_own_timeout_is_refused_at_setup() -> None:
    from pytest_scorewright import openevolve as adapter

    with pytest.raises(ScorewrightError, match="longer than OpenEvolve's evaluator timeout 20s"):
        adapter.evaluator(TASK / "tests", reference=TASK / "reference", timeout=30, loop_timeout=20)


FLAKY = ROOT / "tests" / "flaky_task"


def test_confirm_re_scores_only_a_program_that_would_lead_through_real_openevolve(
    tmp_path: Path,
) -> None:
    path = tmp_path / "evaluate_confirm.py"
    path.write_text(
        "from pytest_scorewright.openevolve import evaluator\n"
        f"_ev = evaluator({str(FLAKY / 'tests')!r}, reference={str(FLAKY / 'reference')!r},\n"
        "               timeout=8, confirm=5, reference_repeats=12, dedupe=False)\n"
        "evaluate = _ev.evaluate\n"
    )
    config = openevolve_config.load_config(str(EXAMPLE / "config.yaml"))
    config.evaluator.cascade_evaluation = False
    config.evaluator.timeout = 120  # 12 tries of 9 s must fit, or the file is refused
    evaluator = openevolve_evaluator.Evaluator(config.evaluator, str(path))
    steady = (FLAKY / "candidates" / "steady.py").read_text()
    first = asyncio.run(evaluator.evaluate_program(steady, "steady"))
    # The first program leads: confirmed, and a steady one keeps its score.
    assert first["scorewright_found_score"] == first["scorewright_confirmed_score"]
    assert first["combined_score"] == first["scorewright_confirmed_score"]
    again = asyncio.run(evaluator.evaluate_program(steady, "steady-again"))
    assert "scorewright_confirmed_score" not in again  # ties the best: not re-scored


def test_confirm_counts_in_the_refusal_of_a_budget_longer_than_the_loops_timeout() -> None:
    from pytest_scorewright import openevolve as adapter

    with pytest.raises(ScorewrightError, match="12 tries of timeout 5s"):
        adapter.evaluator(
            TASK / "tests", reference=TASK / "reference", timeout=5, confirm=5, loop_timeout=60
        )
    with pytest.raises(ScorewrightError, match="confirm must be a whole number"):
        adapter.evaluator(TASK / "tests", reference=TASK / "reference", confirm=-1)


def _evaluation_file(tmp_path: Path, budget: str) -> Path:
    path = tmp_path / "evaluate_fitted.py"
    path.write_text(
        "from pytest_scorewright.openevolve import evaluator\n"
        f"_ev = evaluator({str(TASK / 'tests')!r}, reference={str(TASK / 'reference')!r}"
        f"{budget})\n"
        "evaluate = _ev.evaluate\n"
    )
    return path


def _loop(evaluation_file: Path, timeout: float) -> Any:
    config = openevolve_config.load_config(str(EXAMPLE / "config.yaml"))
    config.evaluator.cascade_evaluation = False
    config.evaluator.timeout = timeout
    return openevolve_evaluator.Evaluator(config.evaluator, str(evaluation_file))


def test_the_loops_own_timeout_is_read_and_a_budget_that_outlives_it_refused_at_its_start(
    tmp_path: Path,
) -> None:
    with pytest.raises(ScorewrightError, match="longer than OpenEvolve's evaluator timeout 10s"):
        _loop(_evaluation_file(tmp_path, ", timeout=8"), timeout=10)
    with pytest.raises(ScorewrightError, match="evaluator timeout 2s leaves 0s for each of 2"):
        _loop(_evaluation_file(tmp_path, ""), timeout=2)


def test_without_a_budget_ours_fits_the_loops_and_a_hang_is_scored_not_stored_as_a_timeout(
    tmp_path: Path,
) -> None:
    loop = _loop(_evaluation_file(tmp_path, ""), timeout=7)
    # Two tries (one retry) of 2.5 s and 1 s of grace each: 7 s.
    assert loop.evaluate_function.__self__.evaluator.limits.timeout_s == 2.5
    started = time.monotonic()
    metrics = asyncio.run(loop.evaluate_program(PROGRAMS["hang"], "hang"))
    assert time.monotonic() - started < 7
    assert metrics["combined_score"] == 0.0, metrics
    assert "timeout" not in metrics, metrics
    honest = asyncio.run(loop.evaluate_program(PROGRAMS["reference"], "reference"))
    assert honest["combined_score"] == 1.0, honest


def test_a_call_the_loop_stopped_waiting_for_is_cancelled_and_leaves_nothing(
    tmp_path: Path,
) -> None:
    from pytest_scorewright import Evaluator, Limits
    from pytest_scorewright.errors import InfrastructureError
    from pytest_scorewright.fitness import Fitness
    from pytest_scorewright.openevolve import ScorewrightOpenEvolve

    hang = tmp_path / "hang.py"
    hang.write_text(PROGRAMS["hang"])
    work = tmp_path / "work"
    work.mkdir()
    core = Evaluator(
        TASK / "tests",
        reference=TASK / "reference",
        limits=Limits(timeout_s=30, test_timeout_s=25),
        workdir=work,
    ).prepare()
    # As OpenEvolve leaves it when the call waited in its queue: the loop's 1.5 s are over
    # long before our 30 s budget.
    adapter = ScorewrightOpenEvolve(core, Fitness(), 0.3, loop_timeout=1.5)
    started = time.monotonic()
    with pytest.raises(InfrastructureError, match="the caller cancelled the call"):
        adapter.evaluate(str(hang))
    assert time.monotonic() - started < 8
    # Only the Evaluator's own fixed root and the pytest configuration it prepared stay.
    # The fixed mount point of the Evaluator still open, with its ini file and its owner.
    left = [p for p in work.rglob("*") if p.name not in ("scorewright.ini", ".owner")]
    assert [p.name[:18] for p in left] == ["scorewright-fixed-"], left
    # The Evaluator is as good afterwards.
    core_result = core.score(TASK / "reference" / "solution.py")
    assert core_result.signal("pass_rate") == 1.0
    core.close()


@pytest.mark.parametrize("group", [True, False], ids=["process-group", "controller-alone"])
def test_openevolves_controller_killed_mid_run_leaves_nothing_of_ours(group: bool) -> None:
    # OpenEvolve's real controller (a scripted model), SIGKILLed six seconds in, alone (its
    # pool's workers live on) or with its whole process group: no process of ours serving
    # it lives on, no work dir is left, no held-out test copy is readable by others.
    from benchmarks.openevolve_killed import one

    ok, line = one(6.0, group, settle=30.0)
    assert ok, line
    # Left by the cleaners, or (a whole group killed at once, CI saw one left once) removed by
    # the next Evaluator's preparation, as sandbox/leftovers.py promises.
    assert "0 work dirs" in line or "(0 after the next Evaluator's sweep)" in line, line
    assert " 0 of ours serving it" not in line, line  # it was killed while being served
