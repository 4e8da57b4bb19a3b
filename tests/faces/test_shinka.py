"""ShinkaEvolve: our evaluate.py run by the real shinka-evolve 0.0.7 package.

Shinka evaluates a program by running ``evaluate.py --program_path P --results_dir D``
through its ``JobScheduler`` and reading ``D/metrics.json`` and ``D/correct.json`` with its
``load_results``; the tests below go through exactly that. (Shinka's ``run_shinka_eval``
helper imports the program into the evaluating process and calls it: what scorewright exists
to prevent, so our evaluate.py replaces it.) The scorewright CLI's ``shinka`` command and bad
input are tested without Shinka.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_scorewright.shinka import shinka_main
from tests.conftest import slow_in_first_call

pytestmark = pytest.mark.sandbox  # every test here forks real sandboxes

TASK = Path(__file__).resolve().parents[2] / "examples" / "quickstart"
REFERENCE = (TASK / "reference" / "solution.py").read_text()

EVALUATE = f"""
from pytest_scorewright.shinka import shinka_main

shinka_main(tests={str(TASK / "tests")!r}, heldout={str(TASK / "heldout")!r},
            reference={str(TASK / "reference")!r})
"""

# An evaluate.py whose warm parent is killed while the program's runs are alive, KILLS times
# (as the OOM killer would): an error of ours, not the program's.
KILLING_EVALUATE = (
    f"PROJECT = {str(Path(__file__).resolve().parents[2])!r}\n"
    + """
import os, signal, sys, threading, time

sys.path.insert(0, PROJECT)
from tests.conftest import sandbox_processes  # root's uid blocks, or an ordinary user's

KILLS = int(sys.argv.pop(sys.argv.index("--kills") + 1)); sys.argv.remove("--kills")


def sandboxes():
    return sandbox_processes(os.getpid())


def children():
    found = []
    for task in os.listdir("/proc/self/task"):
        found += open(f"/proc/self/task/{task}/children").read().split()
    return [int(pid) for pid in found]


def killer():
    for _ in range(KILLS):
        deadline = time.monotonic() + 60
        seen = {}
        # The program's runs, which sleep 4 s: sandboxes alive for a second (the
        # reference's runs are over by then, unless the machine is very slow: then the kill
        # lands on them, an error of ours too).
        while time.monotonic() < deadline:
            now = time.monotonic()
            alive = sandboxes()
            seen = {pid: seen.get(pid, now) for pid in alive}
            if len(alive) >= 2 and now - min(seen.values()) > 1.0:
                break
            time.sleep(0.02)
        for pid in children():  # the warm parent is this process's only child
            os.kill(pid, signal.SIGKILL)
        while sandboxes() and time.monotonic() < deadline:
            time.sleep(0.02)


threading.Thread(target=killer, daemon=True).start()
"""
    # The program's first call sleeps 4 s (so that its runs live long enough to be killed):
    # within its per-test limit, whatever the reference's own times.
    + EVALUATE.replace("reference=", "test_timeout=10, reference=")
)


def _shinka(tmp_path: Path, program: str, evaluate: str = EVALUATE, **extra: Any) -> Any:
    """Evaluate ``program`` as Shinka does: its JobScheduler runs evaluate.py, and its
    load_results reads the files back."""
    pytest.importorskip(
        "shinka.launch", reason="shinka-evolve is not installed: pip install -e '.[dev,loops]'"
    )
    from shinka.launch import JobScheduler, LocalJobConfig

    (tmp_path / "evaluate.py").write_text(evaluate)
    path = tmp_path / "main.py"
    path.write_text(program)
    config = LocalJobConfig(
        eval_program_path=str(tmp_path / "evaluate.py"),
        python_executable=sys.executable,
        extra_cmd_args=extra,
    )
    results, _ = JobScheduler("local", config).run(str(path), str(tmp_path / "results"))
    return results


def test_shinka_reads_the_score_and_keeps_held_out_figures_private(tmp_path: Path) -> None:
    results = _shinka(tmp_path, (TASK / "solution.py").read_text())
    metrics, correct = results["metrics"], results["correct"]
    assert correct == {"correct": True, "error": None}
    assert metrics["combined_score"] == pytest.approx(8 / 9)
    assert metrics["public"]["visible_pass_rate"] == 1.0
    assert "heldout_pass_rate" not in metrics["public"]
    assert metrics["private"]["heldout_pass_rate"] == 0.5
    # The LLM reads text_feedback: a held-out count, never a held-out test's name.
    assert "1/2 held-out tests passed" in metrics["text_feedback"]
    assert "negative_count" not in metrics["text_feedback"]
    assert (tmp_path / "results" / "scorewright.json").exists()


def test_a_program_that_exits_early_is_incorrect_and_scores_nothing(tmp_path: Path) -> None:
    results = _shinka(tmp_path, "import os\nos._exit(0)\n")
    assert results["metrics"]["combined_score"] == 0.0
    assert results["correct"]["correct"] is False
    # Imported in a process of its own (the default isolation here), the program that exits
    # at import fails the tests' import of it.
    assert "could not import the candidate" in results["correct"]["error"]


SLOW = slow_in_first_call(REFERENCE, "encode", 4)


def test_a_run_that_fails_for_a_reason_of_ours_is_scored_again(tmp_path: Path) -> None:
    results = _shinka(tmp_path, SLOW, KILLING_EVALUATE, kills=1)
    assert results["correct"] == {"correct": True, "error": None}, results["stderr_log"]
    assert results["metrics"]["combined_score"] == 1.0
    assert "scorewright: retrying: " in results["stderr_log"]


def test_a_run_that_keeps_failing_for_a_reason_of_ours_is_not_a_score(tmp_path: Path) -> None:
    results = _shinka(tmp_path, SLOW, KILLING_EVALUATE, kills=2)
    correct, metrics = results["correct"], results["metrics"]
    assert correct["correct"] is False  # Shinka leaves incorrect programs out of its scores
    assert correct["error"].startswith("not scored, for a reason of scorewright's")
    assert "warm parent" in correct["error"]
    assert metrics["private"] == {"scorewright_infrastructure": True}
    assert "an error of the evaluator, not of the program" in metrics["text_feedback"]
    assert "scorewright: error: not scored" in results["stderr_log"]


def test_the_scorewright_shinka_command_exits_3_when_not_scored(tmp_path: Path) -> None:
    (tmp_path / "evaluate.py").write_text(
        KILLING_EVALUATE.replace(EVALUATE.replace("reference=", "test_timeout=10, reference="), "")
        + "from pytest_scorewright.cli import main\nsys.exit(main())\n"
    )
    program = tmp_path / "main.py"
    program.write_text(SLOW)
    done = subprocess.run(
        [sys.executable, str(tmp_path / "evaluate.py"), "--kills", "1", "shinka",
         "--program_path", str(program), "--results_dir", str(tmp_path / "r"),
         "--tests", str(TASK / "tests"), "--heldout", str(TASK / "heldout"),
         "--reference", str(TASK / "reference"), "--retries", "0"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 3, done.stderr
    assert json.loads((tmp_path / "r" / "correct.json").read_text())["correct"] is False


def test_shinka_bad_input_still_writes_both_files_with_the_reason(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable, "-m", "pytest_scorewright.cli", "shinka",
            "--program_path", str(tmp_path / "missing.py"), "--results_dir", str(tmp_path / "r"),
            "--tests", str(TASK / "tests"),
        ],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.strip().startswith("scorewright: error: candidate")
    assert "Traceback" not in done.stderr
    correct = json.loads((tmp_path / "r" / "correct.json").read_text())
    assert correct["correct"] is False
    assert "does not exist" in correct["error"]
    assert json.loads((tmp_path / "r" / "metrics.json").read_text())["combined_score"] == 0.0


@pytest.mark.sandbox
def test_shinka_main_passes_every_evaluator_option_on(tmp_path: Path) -> None:
    from pytest_scorewright.result import ScoreResult
    from pytest_scorewright.shinka import shinka_main

    program = tmp_path / "main.py"
    program.write_text((TASK / "solution.py").read_text())
    code = shinka_main(
        ["--program_path", str(program), "--results_dir", str(tmp_path / "out")],
        tests=str(TASK / "tests"),
        reference=str(TASK / "reference"),
        test_timeout=5,
        isolation="in-process",
        dedupe=False,
    )
    assert code == 0
    result = ScoreResult.read(tmp_path / "out" / "scorewright.json")
    assert result.limits is not None
    assert result.limits["test_timeout_s"] == 5.0
    assert result.limits["sandbox"]["isolation"] == "in-process"


FLAKY = Path(__file__).resolve().parents[1] / "flaky_task"


def _evaluate(tmp_path: Path, name: str, program: Path, state: Path) -> dict[str, Any]:
    results = tmp_path / name / "results"
    results.mkdir(parents=True)
    status = shinka_main(
        ["--program_path", str(program), "--results_dir", str(results)],
        tests=str(FLAKY / "tests"),
        reference=str(FLAKY / "reference"),
        timeout=20,
        confirm=5,
        confirm_state=str(state),
        reference_repeats=12,
    )
    assert status == 0
    metrics: dict[str, Any] = json.loads((results / "metrics.json").read_text())
    return metrics


def test_confirm_re_scores_only_a_program_that_would_lead_and_keeps_the_best_in_a_file(
    tmp_path: Path,
) -> None:
    state = tmp_path / "best.json"
    steady = _evaluate(tmp_path, "gen_0", FLAKY / "candidates" / "steady.py", state)
    # The first program leads: confirmed, and a steady one keeps its score.
    assert steady["private"]["scorewright_found_score"] == steady["combined_score"]
    assert steady["private"]["scorewright_confirmed_score"] == steady["combined_score"]
    assert json.loads(state.read_text()) == {"best_confirmed": steady["combined_score"]}
    # In another process (as Shinka runs each evaluation), a tie is not re-scored.
    again = _evaluate(tmp_path, "gen_1", FLAKY / "candidates" / "steady.py", state)
    assert "scorewright_confirmed_score" not in again["private"]
    assert "scorewright_found_score" not in again["public"]
