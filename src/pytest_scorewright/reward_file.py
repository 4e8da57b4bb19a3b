"""A reward file the candidate cannot write: the trusted channel for file-based protocols.

Harbor's tasks (and OpenEnv's, and verifiers' Harbor environment) run ``tests/test.sh`` in
the agent's own container, and the harness reads ``/logs/verifier/reward.txt`` (one number)
or ``reward.json`` afterwards: an agent that writes that file itself scores what it wrote
(a Harbor 0.22 user measured 1.0 for an agent that only wrote the file; ``nan``, ``inf`` and
planted values passed too). ``scorewright reward`` is the verifier's entry point instead:

1. the harness gives the verifier a nonce the agent never saw (``SCOREWRIGHT_REWARD_NONCE``,
   e.g. Harbor's ``[verifier.env]``); without one it refuses, writing nothing;
2. it removes any reward file already there, and refuses (writing nothing) if it cannot;
3. it scores the candidate with the Evaluator: the candidate apart from the tests, in the
   sandbox, which cannot write the reward directory, every process of it gone when
   ``score`` returns;
4. it writes ``reward.json`` (``reward``, and ``scorewright``: the verdict, each test's
   outcome, the nonce's digest and an HMAC of all of it keyed by the nonce) and
   ``reward.txt`` (the number), each atomically; a candidate we could not score (a failure of
   ours) writes none and exits 3 with the reason: no file, never a 0.0.

:func:`read_reward` is the harness's side: the reward counts only if the file carries the
nonce's HMAC over what it says, and the reward is a finite number in [0, 1]; anything else
(planted, edited, ``nan``, ``inf``, ``2.0``) raises :class:`RewardFileError`.

What it does not stop: a process of the agent still running beside the verifier, as the
same user, can read the nonce from the verifier's environment (``/proc``) and sign a file of
its own. Stop the agent's processes before verifying, or run them under another uid.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

from pytest_scorewright.errors import ConfigError
from pytest_scorewright.result import ScoreResult

#: The environment variable holding the verify run's nonce.
NONCE_ENV = "SCOREWRIGHT_REWARD_NONCE"
#: The files the harness reads.
FILES = ("reward.txt", "reward.json")
#: Least length of a nonce: guessing it must be hopeless.
NONCE_MIN = 16


class RewardFileError(Exception):
    """The reward file is missing, planted, edited, or says no finite reward in [0, 1]."""


def require_nonce(nonce: str | None) -> str:
    if not nonce or len(nonce) < NONCE_MIN:
        raise ConfigError(
            f"{NONCE_ENV} must hold a secret of at least {NONCE_MIN} characters the agent "
            "never saw; set it in the verifier's environment (Harbor: [verifier.env])"
        )
    return nonce


def clear(directory: Path) -> None:
    """Remove any reward file in ``directory`` (made if missing): ConfigError if one
    cannot be removed, before anything is scored."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(
            f"cannot make the reward directory {directory} ({exc.strerror})"
        ) from None
    for name in FILES:
        path = directory / name
        try:
            if path.is_dir() and not path.is_symlink():
                raise ConfigError(f"{path} is a directory; remove it before verifying")
            path.unlink(missing_ok=True)
        except OSError as exc:
            raise ConfigError(
                f"cannot remove {path} left before verifying ({exc.strerror}); refusing"
            ) from None


def signed(result: ScoreResult, reward: float, verdict: str, nonce: str) -> dict[str, Any]:
    """``reward.json``'s content: the reward, and what it was made from, under an HMAC."""
    body = {
        "reward": reward,
        "verdict": verdict,
        # The file sits in the agent's container: never a held-out test's name there.
        "tests": {t.nodeid: t.outcome for t in result.tests if not t.heldout},
        "heldout_pass_rate": result.signal("heldout_pass_rate"),
        "nonce_sha256": hashlib.sha256(nonce.encode()).hexdigest(),
    }
    return {"reward": reward, "scorewright": {**body, "hmac": _mac(body, nonce)}}


def write(directory: Path, content: dict[str, Any]) -> None:
    """Both files, each written whole under a temporary name and renamed into place."""
    reward = content["reward"]
    _atomic(directory / "reward.json", json.dumps(content, allow_nan=False, sort_keys=True))
    _atomic(directory / "reward.txt", f"{reward!r}\n")


def read_reward(directory: str | Path, nonce: str) -> float:
    """The reward ``scorewright reward`` wrote in ``directory`` for this ``nonce``."""
    path = Path(directory) / "reward.json"
    try:
        content = json.loads(path.read_text(encoding="utf-8"), parse_constant=_no_constant)
    except (OSError, ValueError) as exc:
        raise RewardFileError(f"no readable reward file at {path} ({exc})") from None
    ours = content.get("scorewright") if isinstance(content, dict) else None
    if not isinstance(ours, dict):
        raise RewardFileError(f"{path} was not written by scorewright reward: no signature")
    body = {k: v for k, v in ours.items() if k != "hmac"}
    mac = ours.get("hmac")
    if not isinstance(mac, str) or not hmac.compare_digest(mac, _mac(body, nonce)):
        raise RewardFileError(f"{path} is not signed with this run's nonce: planted or edited")
    reward = content.get("reward")
    found = _in_range(reward) if reward == body.get("reward") else None
    if found is None:
        raise RewardFileError(f"{path} says no finite reward in [0, 1]: {reward!r}")
    return found


def _in_range(value: object) -> float | None:
    """``value`` as a reward: a finite number in [0, 1], else None."""
    if isinstance(value, bool) or not isinstance(value, float | int):
        return None
    return float(value) if math.isfinite(value) and 0.0 <= value <= 1.0 else None


def _mac(body: dict[str, Any], nonce: str) -> str:
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hmac.new(nonce.encode(), text.encode(), hashlib.sha256).hexdigest()


def _atomic(path: Path, text: str) -> None:
    handle, temporary = tempfile.mkstemp(prefix=".reward-", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number")
