"""`scorewright score`: exit 0 whenever a result was written, 2 for usage errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import validate

pytestmark = pytest.mark.sandbox  # every test here forks real sandboxes

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "quickstart"


def _score(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_scorewright.cli", "score", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
        timeout=120,
    )


def _example_args() -> list[str]:
    return [
        "--tests",
        str(EXAMPLE / "tests"),
        "--heldout",
        str(EXAMPLE / "heldout"),
        "--reference",
        str(EXAMPLE / "reference"),
    ]


def test_scoring_the_example_writes_a_valid_result(tmp_path: Path) -> None:
    out = tmp_path / "fitness.json"
    done = _score(str(EXAMPLE / "solution.py"), *_example_args(), "--out", str(out))
    assert done.returncode == 0, done.stderr
    data = json.loads(out.read_text())
    validate(data)
    assert data["mode"] == "evaluator"
    signals = {s["name"]: s["value"] for s in data["signals"]}
    assert signals["visible_pass_rate"] == 1.0
    assert signals["heldout_pass_rate"] == 0.5
    assert "8/9 passed" in done.stderr


def test_without_out_the_result_goes_to_stdout(tmp_path: Path) -> None:
    done = _score(str(EXAMPLE / "reference" / "solution.py"), *_example_args())
    assert done.returncode == 0, done.stderr
    validate(json.loads(done.stdout))


def test_a_hanging_candidate_still_exits_zero_with_a_result(tmp_path: Path) -> None:
    candidate = tmp_path / "hang.py"
    # Sleeping, in both runs until the budget: a spin would cost two cores for as long.
    sleeps = "import time\n\ndef encode(text):\n    time.sleep(3600)\n\ndecode = encode\n"
    candidate.write_text(sleeps)
    out = tmp_path / "r.json"
    done = _score(str(candidate), *_example_args(), "--out", str(out), "--timeout", "2")
    assert done.returncode == 0, done.stderr
    data = json.loads(out.read_text())
    assert data["ok"] is False
    assert "timed out after" in data["error"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["missing.py", "--tests", str(EXAMPLE / "tests")],
            "candidate 'missing.py' does not exist",
        ),
        (
            [str(EXAMPLE / "solution.py"), "--tests", "no/such/dir"],
            "tests directory 'no/such/dir' does not exist",
        ),
        (
            [str(EXAMPLE / "solution.py"), "--tests", str(EXAMPLE / "tests"), "--module", "a-b"],
            "module 'a-b' is not a Python module name",
        ),
        (
            [str(EXAMPLE / "solution.py"), "--tests", str(EXAMPLE / "tests"), "--out", "/proc/x/y"],
            "cannot write the result to '/proc/x/y'",
        ),
    ],
    ids=["missing_candidate", "missing_tests", "bad_module", "unwritable_out"],
)
def test_usage_errors_are_one_line_and_exit_two(args: list[str], message: str) -> None:
    done = _score(*args)
    assert done.returncode == 2
    assert message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert "Traceback" not in done.stderr


#: Equal to everything: every assertion of the example passes.
ALWAYS_EQUAL = """
class Anything(list):
    def __eq__(self, other):
        return True

def encode(text):
    return Anything()

def decode(runs):
    return Anything()
"""


def test_by_default_gaming_is_rejected_and_warn_only_restores_the_old_score(
    tmp_path: Path,
) -> None:
    candidate = tmp_path / "gaming.py"
    candidate.write_text(ALWAYS_EQUAL)
    scores = {}
    for policy in ((), ("--warn-only",)):
        out = tmp_path / f"r{len(policy)}.json"
        # In process, where an always-equal object can reach the tests' comparisons (with the
        # candidate in a process of its own, the default, it equals nothing to begin with).
        done = _score(
            str(candidate),
            *_example_args(),
            "--out",
            str(out),
            "--isolation",
            "in-process",
            *policy,
        )
        assert done.returncode == 0, done.stderr
        data = json.loads(out.read_text())
        validate(data)
        scores[policy] = data
    default, lenient = scores[()], scores[("--warn-only",)]
    assert default["integrity"]["rejected"] is True
    assert "assertion_not_plain" in {r["code"] for r in default["integrity"]["reasons"]}
    assert default["extra"]["fitness"]["combined_score"] == 0.0
    assert lenient["integrity"]["flagged"] is True
    assert lenient["integrity"]["rejected"] is False
    assert lenient["extra"]["fitness"]["combined_score"] == pytest.approx(8 / 9)


def test_warn_only_and_fail_closed_together_are_a_usage_error() -> None:
    done = _score(str(EXAMPLE / "solution.py"), *_example_args(), "--warn-only", "--fail-closed")
    assert done.returncode == 2
    assert "not allowed with argument" in done.stderr
