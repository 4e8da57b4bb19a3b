"""The verdict on one candidate, from the parent's ScoreResult, in the shapes harnesses read:
SWE-bench's report (``resolved``, ``tests_status``), Harbor's ``reward.json`` (numbers
only) with its details, and the ScoreResult and CTRF report themselves."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_scorewright.result import ScoreResult
from pytest_scorewright.verify.infra import Changes


@dataclass(frozen=True)
class Verdict:
    """Whether a candidate resolves its task, and why.

    Example::

        verdict = verifier.verify(patch=Path("model.diff").read_bytes())
        verdict.resolved, verdict.fail_to_pass["failure"], verdict.swebench_report()
    """

    instance_id: str
    #: The candidate's change applied to the base (a patch that does not apply resolves nothing).
    applied: bool
    resolved: bool
    #: success / failure lists, task ids (relative to the repository).
    fail_to_pass: Mapping[str, list[str]]
    pass_to_pass: Mapping[str, list[str]]
    #: Why it is not resolved, in one line (None when it is).
    why: str | None
    changes: Changes = field(default_factory=Changes)
    #: The parent's measurement (None when the patch did not apply).
    result: ScoreResult | None = None
    #: Each listed test's outcome in the run (``not_run`` where it never reported).
    outcomes: Mapping[str, str] = field(default_factory=dict)
    #: What the runs took of the base's pytest configuration (BaseConfig.to_dict()).
    base_config: Mapping[str, Any] = field(default_factory=dict)
    #: Listed tests flaky at the base (Verifier.quarantined): their outcomes are in
    #: ``outcomes``, and they are in neither ``fail_to_pass`` nor ``pass_to_pass``.
    quarantined: Sequence[str] = ()

    @classmethod
    def judge(
        cls,
        instance_id: str,
        result: ScoreResult,
        *,
        fail_to_pass: Sequence[str],
        pass_to_pass: Sequence[str],
        run_ids: Mapping[str, str],
        changes: Changes,
        base_config: Mapping[str, Any] | None = None,
        quarantined: Sequence[str] = (),
    ) -> Verdict:
        """``run_ids``: task id -> the Evaluator's node id; ``quarantined``: listed tests that
        decide nothing (flaky at the base)."""
        records = {t.nodeid: t for t in result.tests}
        outcomes = {}
        for task_id in (*fail_to_pass, *pass_to_pass):
            record = records.get(run_ids[task_id])
            outcomes[task_id] = record.outcome if record else "not_run"
        fail_to_pass = [t for t in fail_to_pass if t not in quarantined]
        pass_to_pass = [t for t in pass_to_pass if t not in quarantined]
        passed = {
            task_id
            for task_id in outcomes
            if (record := records.get(run_ids[task_id])) is not None and record.passed
        }
        f2p = _split(fail_to_pass, passed)
        p2p = _split(pass_to_pass, passed)
        why = None
        if not result.ok:
            why = f"the run did not complete: {result.error}"
        elif result.integrity.rejected:
            codes = sorted({r.code for r in result.integrity.reasons if r.severity != "hint"})
            why = "rejected by the integrity policy: " + ", ".join(codes)
        else:
            why = _failing("fail-to-pass", f2p, outcomes) or _failing("pass-to-pass", p2p, outcomes)
        config = dict(base_config or {})
        return cls(
            instance_id,
            True,
            why is None,
            f2p,
            p2p,
            why,
            changes,
            result,
            outcomes,
            config,
            tuple(quarantined),
        )

    @classmethod
    def not_applied(
        cls, instance_id: str, why: str, fail_to_pass: Sequence[str], pass_to_pass: Sequence[str]
    ) -> Verdict:
        return cls(
            instance_id,
            False,
            False,
            {"success": [], "failure": list(fail_to_pass)},
            {"success": [], "failure": list(pass_to_pass)},
            f"the patch does not apply: {why}",
        )

    def swebench_report(self) -> dict[str, Any]:
        """SWE-bench's ``report.json`` for this instance, with scorewright's evidence."""
        return {
            self.instance_id: {
                "patch_is_None": False,
                "patch_exists": True,
                "patch_successfully_applied": self.applied,
                "resolved": self.resolved,
                "tests_status": {
                    "FAIL_TO_PASS": dict(self.fail_to_pass),
                    "PASS_TO_PASS": dict(self.pass_to_pass),
                    "FAIL_TO_FAIL": {"success": [], "failure": []},
                    "PASS_TO_FAIL": {"success": [], "failure": []},
                },
                "scorewright": self.details(),
            }
        }

    def harbor_reward(self) -> dict[str, float | int]:
        """Harbor's ``reward.json``: numbers only (Harbor reads it as ``dict[str, float |
        int]``; the lists go to :meth:`details`)."""
        return {
            "reward": 1.0 if self.resolved else 0.0,
            "fail_to_pass_passed": len(self.fail_to_pass["success"]),
            "fail_to_pass_total": sum(map(len, self.fail_to_pass.values())),
            "pass_to_pass_passed": len(self.pass_to_pass["success"]),
            "pass_to_pass_total": sum(map(len, self.pass_to_pass.values())),
            "integrity_flagged": int(bool(self.result and self.result.integrity.flagged)),
            "test_infrastructure_changes": len(self.changes.infrastructure),
        }

    def details(self) -> dict[str, Any]:
        """Why, each listed test's outcome, the integrity evidence and what was not loaded."""
        reasons = self.result.integrity.reasons if self.result else ()
        return {
            "resolved": self.resolved,
            "why": self.why,
            "outcomes": dict(self.outcomes),
            "quarantined": list(self.quarantined),
            "integrity": [
                {"code": r.code, "severity": r.severity, "detail": r.detail} for r in reasons
            ],
            "rejected": bool(self.result and self.result.integrity.rejected),
            "candidate_changes_not_used": self.changes.to_dict(),
            "base_pytest_config": dict(self.base_config),
        }


def _split(ids: Sequence[str], passed: set[str]) -> dict[str, list[str]]:
    return {
        "success": [i for i in ids if i in passed],
        "failure": [i for i in ids if i not in passed],
    }


def _failing(kind: str, split: Mapping[str, list[str]], outcomes: Mapping[str, str]) -> str | None:
    if not split["failure"]:
        return None
    first = split["failure"][0]
    return f"{len(split['failure'])} {kind} test(s) do not pass, first {first} ({outcomes[first]})"
