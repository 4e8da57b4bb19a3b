"""ShinkaEvolve files, on the bundled example task."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

TASK = Path(__file__).resolve().parent.parent / "examples" / "quickstart"


@pytest.mark.sandbox
def test_scorewright_shinka_writes_metrics_and_correct(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable, "-m", "pytest_scorewright.cli", "shinka",
            "--program_path", str(TASK / "solution.py"),
            "--results_dir", str(tmp_path),
            "--tests", str(TASK / "tests"),
            "--heldout", str(TASK / "heldout"),
            "--reference", str(TASK / "reference"),
        ],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    correct = json.loads((tmp_path / "correct.json").read_text())
    assert set(metrics) == {"combined_score", "public", "private", "text_feedback"}
    assert metrics["combined_score"] == pytest.approx(8 / 9)
    assert metrics["public"]["visible_pass_rate"] == 1.0
    assert "heldout_pass_rate" not in metrics["public"]
    assert metrics["private"]["heldout_pass_rate"] == 0.5
    assert "negative_count" not in metrics["text_feedback"]
    assert "1/2 held-out tests passed" in metrics["text_feedback"]
    assert correct == {"correct": True, "error": None}
    assert (tmp_path / "scorewright.json").exists()


@pytest.mark.sandbox
def test_an_evaluate_py_for_shinka_is_two_lines(tmp_path: Path) -> None:
    evaluate = tmp_path / "evaluate.py"
    evaluate.write_text(
        "from pytest_scorewright.shinka import shinka_main\n"
        f"shinka_main(tests={str(TASK / 'tests')!r}, reference={str(TASK / 'reference')!r})\n"
    )
    broken = tmp_path / "broken.py"
    broken.write_text("import os\nos._exit(0)\n")
    out = tmp_path / "results"
    done = subprocess.run(
        [sys.executable, str(evaluate), "--program_path", str(broken), "--results_dir", str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads((out / "metrics.json").read_text())["combined_score"] == 0.0
    correct = json.loads((out / "correct.json").read_text())
    assert correct["correct"] is False
    # Imported in a process of its own (the default isolation here), the candidate that exits
    # at import fails the tests' import of it.
    assert "could not be collected with the candidate" in correct["error"]


@pytest.mark.sandbox
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
