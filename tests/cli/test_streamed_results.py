"""`scorewright score-many --jsonl`: one ScoreResult a line, written as each candidate finishes,
so a caller killed mid-batch keeps everything measured before."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_scorewright.result import ScoreResult
from tests.conftest import validate

pytestmark = pytest.mark.sandbox  # every test here forks real sandboxes

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "quickstart"
TASK = (
    *("--tests", str(EXAMPLE / "tests"), "--heldout", str(EXAMPLE / "heldout")),
    *("--reference", str(EXAMPLE / "reference")),
)
#: A hang that sleeps: what is tested is the caller's kill, not the run's clock, and a spin
#: costs a core until then.
HANG = "import time\n\ndef encode(text):\n    time.sleep(3600)\n\ndecode = encode\n"


def _score_many(*args: str) -> list[str]:
    return [sys.executable, "-m", "pytest_scorewright.cli", "score-many", *args]


def test_jsonl_to_stdout_prints_one_parseable_result_per_candidate(tmp_path: Path) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("def encode(:\n")
    candidates = [EXAMPLE / "solution.py", EXAMPLE / "reference" / "solution.py", broken]
    done = subprocess.run(
        _score_many(*(str(c) for c in candidates), *TASK, "--jsonl", "-"),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == len(candidates)
    results = [ScoreResult.from_json(line) for line in lines]
    for line in lines:
        validate(json.loads(line))
    by_candidate = {Path(str(r.extra["candidate"])): r for r in results}
    assert set(by_candidate) == {c.resolve() for c in candidates}
    reference = by_candidate[(EXAMPLE / "reference" / "solution.py").resolve()]
    assert reference.extra["fitness"]["combined_score"] == 1.0
    assert by_candidate[broken.resolve()].ok is False
    assert "results on stdout" in done.stderr


def test_a_caller_killed_mid_batch_keeps_every_result_written_before(tmp_path: Path) -> None:
    quick = [EXAMPLE / "solution.py", EXAMPLE / "reference" / "solution.py"]
    hangs = []
    for n in range(3):
        hang = tmp_path / f"hang{n}.py"
        hang.write_text(HANG)
        hangs.append(hang)
    stream = tmp_path / "results.jsonl"
    caller = subprocess.Popen(
        _score_many(
            *(str(c) for c in [*quick, *hangs]),
            *TASK,
            *("--jsonl", str(stream), "-j", "1", "--timeout", "30"),
        ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while _lines(stream) < len(quick) and time.monotonic() < deadline:
            assert caller.poll() is None, "the batch ended before it was killed"
            time.sleep(0.05)
        assert _lines(stream) == len(quick)
        time.sleep(0.5)  # the first hanging candidate is in its sandbox now
        os.kill(caller.pid, signal.SIGKILL)
        caller.wait(timeout=30)
    finally:
        if caller.poll() is None:
            caller.kill()
            caller.wait()
    text = stream.read_text(encoding="utf-8")
    assert text.endswith("\n")  # whole lines only
    kept = [ScoreResult.from_json(line) for line in text.splitlines()]
    assert [Path(str(r.extra["candidate"])) for r in kept] == [c.resolve() for c in quick]
    assert all(r.ok for r in kept)


def _lines(path: Path) -> int:
    try:
        return path.read_text(encoding="utf-8").count("\n")
    except FileNotFoundError:
        return 0


def test_score_many_without_out_dir_or_jsonl_is_a_one_line_usage_error() -> None:
    done = subprocess.run(
        _score_many(str(EXAMPLE / "solution.py"), *TASK),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr == (
        "scorewright: error: score-many needs --out-dir DIR, --jsonl FILE (or -), or both\n"
    )
