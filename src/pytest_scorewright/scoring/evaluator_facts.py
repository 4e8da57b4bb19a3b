"""What an Evaluator is, read off its preparation: the properties of the public face
(evaluator.py), in the caller's process. Reading most of them prepares the evaluator."""

from __future__ import annotations

from pathlib import Path

from pytest_scorewright.limits import Limits
from pytest_scorewright.sandbox import guarantees, host
from pytest_scorewright.scoring import reference as references
from pytest_scorewright.scoring.prepared import Dirs, Prepared
from pytest_scorewright.scoring.runs import Expected, Runner
from pytest_scorewright.scoring.settings import EvaluatorSettings


class EvaluatorFacts:
    """The read-only properties of :class:`~pytest_scorewright.evaluator.Evaluator`."""

    _settings: EvaluatorSettings
    _dirs: Dirs

    def _prepared(self) -> Prepared:
        raise NotImplementedError  # the Evaluator's: prepared once, under its lock

    @property
    def _runner(self) -> Runner:
        """The runs' machinery (the warm parent, the planner): for tests and benchmarks."""
        return self._prepared().runner

    @property
    def settings(self) -> EvaluatorSettings:
        """Every option, checked and frozen: what another process needs to build this
        Evaluator again (``Evaluator.from_settings``)."""
        return self._settings

    @property
    def limits(self) -> Limits:
        """The limits candidates run under: the per-test limit calibrated from the
        reference's run when none was given (so reading it prepares the evaluator)."""
        return self._prepared().limits

    @property
    def features(self) -> host.Features:
        """What this host's kernel and user allow (namespaces, Landlock, cgroups...)."""
        return self._prepared().features

    @property
    def use_namespaces(self) -> bool:
        return self._prepared().use_namespaces

    @property
    def expected_visible(self) -> Expected:
        """The visible suite's test ids (and their markers), from the trusted collection."""
        return self._prepared().expected_visible

    @property
    def expected_heldout(self) -> Expected:
        return self._prepared().expected_heldout

    @property
    def module(self) -> str:
        """The module name the tests import the candidate under (the first, if several)."""
        return self._settings.modules[0]

    @property
    def tests(self) -> Path:
        return self._dirs.tests

    @property
    def heldout(self) -> Path | None:
        return self._dirs.heldout

    @property
    def isolated(self) -> bool:
        """Whether candidates run apart from the tests (docs/isolation.md)."""
        return self.reference.isolated

    @property
    def isolation_why(self) -> str:
        return self.reference.isolation_why

    @property
    def reference(self) -> references.Reference:
        """Everything learned from the reference (its benchmarks, submissions...), frozen."""
        return self._prepared().reference

    @property
    def guarantees(self) -> dict[str, str | None]:
        """Each sandbox guarantee (``sandbox.guarantees.GUARANTEES``) of this evaluator's
        runs: None where it holds here, else why not."""
        return guarantees.assess(self._prepared().runner.planner.planned_facts())
