"""A real git repository of one commit, made from files given here (the verify tests' tasks)."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path


def one_commit(repo: Path, files: Mapping[str, str], home: Path) -> str:
    """Write ``files`` (path in the repository -> text) under ``repo``, commit them as one
    commit on ``main`` with no system or user git configuration, and return its id."""
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text, encoding="utf-8")
    env = {"GIT_CONFIG_NOSYSTEM": "1", "HOME": str(home)}
    ident = ["-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], [*ident, "commit", "-q", "-m", "b"]):
        subprocess.run(["git", *args], cwd=repo, check=True, env=env, capture_output=True)
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repo, check=True, env=env, capture_output=True, text=True
    )
    return head.stdout.strip()
