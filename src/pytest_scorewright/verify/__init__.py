"""``scorewright verify``: a trusted verdict for repository-scale tasks (SWE-bench, Harbor):
the base commit without its history, the candidate's change, the task's own tests, and the
parent deciding each outcome (docs/verify.md)."""

from __future__ import annotations

from pytest_scorewright.verify.task import RepoTask, read_ids
from pytest_scorewright.verify.task_verdict import Verdict
from pytest_scorewright.verify.verifier import Verifier

__all__ = ["RepoTask", "Verdict", "Verifier", "read_ids"]
