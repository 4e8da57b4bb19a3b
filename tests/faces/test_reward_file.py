"""``scorewright reward`` and ``read_reward`` (pytest_scorewright/reward_file.py): the trusted
reward channel for file-based protocols, run as Harbor's ``tests/test.sh`` would run it, with
real candidates that plant, overwrite and forge the reward file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_scorewright.results.measure import build_result
from pytest_scorewright.reward_file import NONCE_ENV, RewardFileError, read_reward, signed

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart"
NONCE = "n0nce-the-agent-never-saw-1234"


def _reward(
    candidate: Path, rewards: Path, nonce: str | None = NONCE
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != NONCE_ENV}
    if nonce is not None:
        env[NONCE_ENV] = nonce
    q = QUICKSTART
    return subprocess.run(
        [sys.executable, "-m", "pytest_scorewright.cli", "reward", str(candidate),
         "--tests", str(q / "tests"), "--heldout", str(q / "heldout"),
         "--reference", str(q / "reference"), "--reward-dir", str(rewards)],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )  # fmt: skip


@pytest.mark.slow
@pytest.mark.sandbox
def test_a_planted_file_is_removed_and_the_written_one_reads_back(tmp_path: Path) -> None:
    rewards = tmp_path / "verifier"
    rewards.mkdir()
    (rewards / "reward.json").write_text('{"reward": 1.0}')
    (rewards / "reward.txt").write_text("1.0\n")
    done = _reward(QUICKSTART / "solution.py", rewards)  # the held-out bug
    assert done.returncode == 0, done.stderr
    reward = read_reward(rewards, NONCE)
    assert 0.0 < reward < 1.0
    assert float((rewards / "reward.txt").read_text()) == reward
    written = json.loads((rewards / "reward.json").read_text())
    assert written["scorewright"]["verdict"] == "failed"
    assert "negative" not in json.dumps(written)  # no held-out test's name in the container
    with pytest.raises(RewardFileError, match="not signed with this run's nonce"):
        read_reward(rewards, "another-run-s-nonce-0000")


@pytest.mark.slow
@pytest.mark.sandbox
def test_a_candidate_that_writes_the_reward_file_itself_gains_nothing(tmp_path: Path) -> None:
    rewards = tmp_path / "verifier"
    # At import, and from a child it leaves behind to write after the run: both fail, or
    # are overwritten, and neither carries the nonce.
    forger = tmp_path / "solution.py"
    forger.write_text(
        "import os, time\n"
        f"target = {str(rewards / 'reward.json')!r}\n"
        "def plant():\n"
        "    try:\n"
        "        with open(target, 'w') as out:\n"
        "            out.write('{\"reward\": 1.0}')\n"
        "    except OSError:\n"
        "        pass\n"
        "plant()\n"
        "if os.fork() == 0:\n"
        "    time.sleep(1.0)\n"
        "    plant()\n"
        "    os._exit(0)\n"
        "def encode(text):\n    return []\n\ndef decode(runs):\n    return ''\n",
        encoding="utf-8",
    )
    done = _reward(forger, rewards)
    assert done.returncode == 0, done.stderr
    time.sleep(2.0)  # the child would have written by now, had it outlived the run
    reward = read_reward(rewards, NONCE)
    assert reward < 0.5
    assert json.loads((rewards / "reward.json").read_text())["reward"] == reward


@pytest.mark.slow
def test_without_a_nonce_or_with_a_file_that_cannot_go_nothing_is_scored(tmp_path: Path) -> None:
    rewards = tmp_path / "verifier"
    done = _reward(QUICKSTART / "solution.py", rewards, nonce=None)
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0
    assert NONCE_ENV in done.stderr
    assert not rewards.exists() or not list(rewards.glob("reward.*"))
    (rewards / "reward.json").mkdir(parents=True)
    done = _reward(QUICKSTART / "solution.py", rewards)
    assert done.returncode == 2
    assert "is a directory; remove it before verifying" in done.stderr
    assert not (rewards / "reward.txt").exists()


def _signed_file(directory: Path, reward: float, nonce: str = NONCE) -> Path:
    result = build_result([], mode="evaluator", duration_s=0.1)
    content = signed(result, reward, "passed", nonce)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "reward.json").write_text(json.dumps(content))
    return directory / "reward.json"


@pytest.mark.parametrize(
    "forge",
    [
        '{"reward": 1.0}',  # planted
        '{"reward": NaN, "scorewright": {}}',
        '{"reward": Infinity}',
        "1.0",
        "",
    ],
    ids=["planted", "nan", "inf", "not-an-object", "empty"],
)
def test_a_file_not_signed_for_this_run_never_counts(tmp_path: Path, forge: str) -> None:
    (tmp_path / "reward.json").write_text(forge)
    with pytest.raises(RewardFileError):
        read_reward(tmp_path, NONCE)


def test_an_edited_or_out_of_range_reward_never_counts(tmp_path: Path) -> None:
    path = _signed_file(tmp_path, 0.25)
    assert read_reward(tmp_path, NONCE) == 0.25
    edited = json.loads(path.read_text())
    edited["reward"] = edited["scorewright"]["reward"] = 1.0  # the HMAC no longer fits
    path.write_text(json.dumps(edited))
    with pytest.raises(RewardFileError, match="planted or edited"):
        read_reward(tmp_path, NONCE)
    outer = json.loads(_signed_file(tmp_path, 0.25).read_text())
    outer["reward"] = 1.0  # only the number the harness reads
    path.write_text(json.dumps(outer))
    with pytest.raises(RewardFileError, match="no finite reward"):
        read_reward(tmp_path, NONCE)
    for bad in (2.0, -0.1):
        # Signed with the nonce, but out of range: a fitness that is not a reward is never one.
        _signed_file(tmp_path, bad)
        with pytest.raises(RewardFileError, match="no finite reward"):
            read_reward(tmp_path, NONCE)
