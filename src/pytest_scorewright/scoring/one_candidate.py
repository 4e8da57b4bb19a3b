"""One candidate's trip, in the caller, top to bottom: run the suites, apply what the
reference says applies, repeat the visible run for timing, gather the evidence into the
result, and re-measure where a speed claim needs it. The Evaluator prepares what this needs
once (scoring/prepared.py) and hands each candidate here; the judge, the memory of results
already given and the fan-out stay with it.

Read in order, each step is one call:

1. ``ready.run``: the visible and held-out runs, judged (scoring/runs.py, integrity/verdict.py);
   a run whose test process was SIGKILLed, not by us, made once more;
2. applicability: the tests the reference skips, xfails or is flaky in, set aside
   (scoring/applicable.py);
3. repeats of the visible run, for the timing checks;
4. the result: evidence from every source and the signals (scoring/assemble.py), held-out ids
   as the user laid them out (results/heldout_ids.py);
5. a claimed speedup re-measured, the reference's run beside it (scoring/remeasure.py), and
   the result assembled again from the combined figures.
"""

from __future__ import annotations

import dataclasses
import signal
from collections.abc import Sequence
from pathlib import Path

from pytest_scorewright.integrity.verdict import RunVerdict
from pytest_scorewright.result import Policy, ScoreResult
from pytest_scorewright.results.candidate_coverage import candidate_files
from pytest_scorewright.results.heldout_ids import with_heldout_ids
from pytest_scorewright.sandbox.workspace import CopyReport
from pytest_scorewright.scoring.assemble import assemble
from pytest_scorewright.scoring.objectives import ObjectiveSet
from pytest_scorewright.scoring.prepared import Dirs, Prepared
from pytest_scorewright.scoring.remeasure import combine_measurements, remeasured_suite
from pytest_scorewright.scoring.runs import Judged, Suite
from pytest_scorewright.scoring.settings import EvaluatorSettings


@dataclasses.dataclass(frozen=True)
class OneCandidate:
    """What scoring one candidate needs of its Evaluator: what it prepared, its directories,
    settings, integrity policy and objectives."""

    ready: Prepared
    dirs: Dirs
    settings: EvaluatorSettings
    policy: Policy
    objectives: ObjectiveSet

    def score(self, path: Path, suites: Sequence[Suite]) -> ScoreResult:
        """The candidate at ``path`` scored on ``suites``: steps 1 to 5 of the module's list."""
        ready = self.ready
        judged, copied, visible_s = ready.run(path, suites)
        judged, run_again = self._once_more_if_killed(path, suites, judged)
        for suite, (verdict, _) in zip(suites, judged, strict=True):
            applicability = ready.reference.applicability.get(suite.name)
            if applicability is not None:
                verdict.records = applicability.apply(verdict.records)
        repeats = [judged[0][0].timing.tests_s]
        for _ in range(self.settings.repeats):
            ((again, _),), _, _ = ready.run(path, suites[:1], visible_s)
            repeats.append(again.timing.tests_s)
        result = self._result(path, suites, judged, copied, repeats)
        if run_again:
            result = dataclasses.replace(result, extra={**result.extra, "run_again": run_again})
        narrowed = remeasured_suite(result, suites[0])
        if narrowed is None:
            return result
        again, beside = self._side_by_side(path, narrowed, visible_s)
        combine_measurements(judged[0][0], again, beside, ready.reference.bench)
        claimed = result.signal("speedup")
        result = self._result(path, suites, judged, copied, repeats)
        measured = {"speedup_measured": [claimed, result.signal("speedup")]}
        return dataclasses.replace(result, extra={**result.extra, **measured})

    def _once_more_if_killed(
        self, path: Path, suites: Sequence[Suite], judged: list[Judged]
    ) -> tuple[list[Judged], list[str]]:
        """A test process killed by SIGKILL, and not by us (a deadline is ours): by the OOM
        killer, by the candidate itself, or from outside (a scheduler, an operator), which is
        no failure of the candidate's and would read as one. That run is made once more; a
        second kill is the candidate's. Returns the runs, and the suites run again."""
        kept, again = list(judged), []
        for index, (suite, (_, seen)) in enumerate(zip(suites, judged, strict=True)):
            if seen.signal == signal.SIGKILL and not seen.timed_out and seen.stopped is None:
                ((verdict, observed),), _, _ = self.ready.run(path, [suite])
                kept[index] = (verdict, observed)
                again.append(suite.name)
        return kept, again

    def _side_by_side(
        self, path: Path, suite: Suite, share: float
    ) -> tuple[RunVerdict, RunVerdict | None]:
        """The candidate's re-measurement, with the reference's run of the same tests beside
        it when there is a reference (scoring/remeasure.py)."""
        ready, reference = self.ready, self.dirs.reference
        if reference is None:
            ((again, _),), _, _ = ready.run(path, [suite], share)
            return again, None
        (again, _), (beside, _) = ready.runner.side_by_side(
            [path, reference],
            suite,
            share,
            isolated=ready.reference.isolated,
            anchors=ready.reference.anchors,
        )
        return again, beside

    def _result(
        self,
        path: Path,
        suites: Sequence[Suite],
        judged: Sequence[Judged],
        copied: CopyReport,
        repeats: list[float],
    ) -> ScoreResult:
        ready, settings = self.ready, self.settings
        reference = ready.reference
        assembled = assemble(
            path,
            [(suite.name, run) for suite, run in zip(suites, judged, strict=True)],
            copied,
            repeats,
            reference=reference,
            policy=self.policy,
            limits=ready.limits,
            network=settings.network,
            reference_failures=reference.failures() if settings.reference_baseline else None,
            objectives=self.objectives,
            covered_files=(
                candidate_files(path, settings.modules[0]) if settings.coverage else None
            ),
            pytest_config=ready.runner.planner.pytest_config_record(
                judged[0][1].isolation.get("pytest_config"), self.dirs.tests
            ),
        )
        heldout = self.dirs.heldout
        return with_heldout_ids(assembled, heldout.name) if heldout is not None else assembled
