"""The evaluator: score an untrusted candidate with a trusted test suite, in a sandbox.

The Evaluator is the trusted parent. It never imports candidate code; it learns the expected
test ids from a trusted collection when it is built, runs each candidate's visible tests and
held-out tests in separate sandboxed children, and decides every outcome itself.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from pytest_scorewright.errors import ConfigError
from pytest_scorewright.fanout.remote import score_on_worker
from pytest_scorewright.fanout.window import bounded
from pytest_scorewright.integrity.reasons import Baseline
from pytest_scorewright.integrity.verdict import RunVerdict, judge
from pytest_scorewright.limits import Limits
from pytest_scorewright.result import ScoreResult, TestRecord
from pytest_scorewright.results.applicable import ReferenceOutcomes
from pytest_scorewright.results.assemble import assemble
from pytest_scorewright.sandbox import features
from pytest_scorewright.sandbox.collect import STUB, expected_ids
from pytest_scorewright.sandbox.launch import run_sandboxed
from pytest_scorewright.sandbox.plan import RunPlanner, RunSettings
from pytest_scorewright.sandbox.wire import Anchor, ChildOutcome
from pytest_scorewright.sandbox.workspace import (
    CopyReport,
    Workspace,
    require_candidate,
    require_dir,
    require_support,
)
from pytest_scorewright.warm.parent import WarmParent, take_prestarted


class Evaluator:
    """Score candidate programs with a trusted pytest suite, each in a fresh sandbox.

    Example::

        evaluator = Evaluator("tests/", heldout="heldout/", reference="reference/")
        result = evaluator.score("candidate.py")  # a .py file or a directory
        print(result.signal("pass_rate"), result.integrity.flagged)

    Parameters:

    - ``tests``: directory of trusted visible tests, copied fresh into every run.
    - ``heldout``: directory of trusted held-out tests, run apart from the visible ones (the
      visible run never sees them); their pass rate is scored apart.
    - ``reference``: a trusted solution (a ``.py`` file or a directory). The expected test ids
      are collected with it, it must pass both suites, its timing is the baseline and its
      anchored values the expectations. The tests it skips or xfails are not applicable: no
      candidate is scored on them. Without it, the suite is collected against a stand-in
      module.
    - ``reference_baseline``: tests the reference fails are not applicable either (instead of
      refusing the suite); each result counts them (``reference_failures``).
    - ``module``: the name the tests import the candidate under (a ``.py`` candidate is copied
      in as ``<module>.py``, a package directory as ``<module>/``), or several names (a
      project with more than one top-level package, the first one the main). These modules
      are imported from the candidate only, even where a copy is installed.
    - ``limits``: :class:`~pytest_scorewright.limits.Limits` of every run (budget, CPU,
      memory, files, processes, output).
    - ``network``: allow the network (by default a run has a loopback of its own).
    - ``fail_closed``: mark flagged results rejected.
    - ``env``: extra environment variables for every run (the rest is an allow-list).
    - ``plugins``: pytest plugins (module names) every run loads (pytest-timeout always is:
      it enforces ``limits.test_timeout_s``). Plugins are not autoloaded in a run: name
      those the suite needs (``pytest_asyncio.plugin``, ``anyio.pytest_plugin``, ...).
    - ``ini``: the suite's own pytest ini options (``{"asyncio_mode": "auto"}``); no ini file
      of the suite or the candidate is read. A multi-line value is a list.
    - ``workdir``: where run directories are made (default: the system temp dir).
    - ``namespaces``: ``False`` skips Linux namespaces even where they work (the degraded mode
      of docs/sandbox.md, for hosts that forbid them).
    - ``repeats``: run the visible tests this many more times, for timing checks.
    - ``support_files``: trusted files or directories copied next to every candidate.
    - ``warm``: fork every run from a warm parent (default); ``False`` forks from this
      process, which must then be single-threaded.
    - ``preload``: modules the warm parent imports once, for every run.
    """

    def __init__(
        self,
        tests: str | os.PathLike[str],
        heldout: str | os.PathLike[str] | None = None,
        reference: str | os.PathLike[str] | None = None,
        module: str | Sequence[str] = "solution",
        limits: Limits | None = None,
        network: bool = False,
        fail_closed: bool = False,
        env: Mapping[str, str] | None = None,
        plugins: Sequence[str] = ("pytest_timeout",),
        workdir: str | os.PathLike[str] | None = None,
        namespaces: bool = True,
        repeats: int = 0,
        support_files: Sequence[str | os.PathLike[str]] | None = None,
        warm: bool = True,
        preload: Sequence[str] = (),
        reference_baseline: bool = False,
        ini: Mapping[str, str] | None = None,
    ) -> None:
        # Everything needed to build this Evaluator again in another process (score_many with
        # an executor): plain, picklable values.
        self.recipe: dict[str, Any] = {
            "tests": os.fspath(tests),
            "heldout": os.fspath(heldout) if heldout else None,
            "reference": os.fspath(reference) if reference else None,
            "module": module if isinstance(module, str) else list(module),
            "reference_baseline": reference_baseline,
            "ini": dict(ini or {}),
            "limits": dataclasses.asdict(limits or Limits()),
            "network": network,
            "fail_closed": fail_closed,
            "env": dict(env or {}),
            "plugins": list(plugins),
            "repeats": repeats,
            "support_files": [os.fspath(p) for p in support_files or ()],
            "preload": list(preload),
        }
        modules = (module,) if isinstance(module, str) else tuple(module)
        for name in modules or ("",):
            if not name.isidentifier():
                raise ConfigError(f"module {name!r} is not a Python module name; use e.g. solution")
        module = modules[0]
        for key in ini or {}:
            if not key.replace("_", "").replace("-", "").isalnum():
                raise ConfigError(f"ini option {key!r} is not an ini key; use e.g. asyncio_mode")
        if repeats < 0:
            raise ConfigError(f"repeats must be 0 or more, not {repeats}")
        self.module, self.modules = module, modules
        self.tests = require_dir(tests, "tests directory")
        self.heldout = require_dir(heldout, "held-out tests directory") if heldout else None
        self.reference = require_candidate(reference, "reference") if reference else None
        if reference_baseline and self.reference is None:
            raise ConfigError("reference_baseline needs a reference; pass reference= as well")
        self.reference_baseline = reference_baseline
        self.limits = limits or Limits()
        self.network = network
        self.fail_closed = fail_closed
        self.repeats = repeats
        self.features = features.probe()
        self.use_namespaces = namespaces and self.features.namespaces_unavailable is None
        # Every run is forked by the warm parent, a clean single-threaded process; warm=False
        # forks from this process instead (which must then be single-threaded).
        self._warm = (take_prestarted(preload) or WarmParent(preload)) if warm else None
        suites = [t for t in (self.tests, self.heldout) if t is not None]
        self._planner = RunPlanner(
            RunSettings(
                module=module,
                modules=modules,
                limits=self.limits,
                network=network,
                env=dict(env or {}),
                plugins=tuple(plugins),
                workdir=require_dir(workdir, "work directory") if workdir else None,
                support=tuple(require_support(p) for p in support_files or ()),
                use_namespaces=self.use_namespaces,
                features=self.features,
                ini=dict(ini or {}),
            ),
            suites=suites,
            trusted=[*suites, *([self.reference] if self.reference else [])],
            warm=self._warm is not None,
        )
        self.expected_visible, self.expected_heldout = self._collect_suites()
        self.anchors: dict[str, dict[str, list[Anchor]]] = {}
        #: Per suite: the tests the reference says do not apply (results/applicable.py).
        self.applicability: dict[str, ReferenceOutcomes] = {}
        self.baseline = self._measure_reference() if self.reference is not None else None

    # -- public ------------------------------------------------------------------------------

    def score(
        self,
        candidate: str | os.PathLike[str],
        *,
        only: Sequence[str] | None = None,
        heldout: bool = True,
    ) -> ScoreResult:
        """Score one candidate: a ``.py`` file (run as ``<module>.py``) or a directory.

        ``only`` limits the visible run to those test ids (a quick first stage);
        ``heldout=False`` skips the held-out run.
        """
        path = require_candidate(candidate, "candidate")
        expected_visible = self.expected_visible
        if only is not None:
            wanted = set(only)
            unknown = wanted - {nodeid for nodeid, _ in expected_visible}
            if unknown:
                raise ConfigError(f"no visible test {sorted(unknown)[0]!r}; use ids the suite has")
            expected_visible = [e for e in expected_visible if e[0] in wanted]
        select = [nodeid for nodeid, _ in expected_visible] if only is not None else None
        suites = self._suites(expected_visible, select, with_heldout=heldout)
        judged, copied, visible_s = self._run_suites(path, suites)
        for suite, (verdict, _) in zip(suites, judged, strict=True):
            applicability = self.applicability.get(suite.name)
            if applicability is not None:
                verdict.records = applicability.apply(verdict.records)
        runs = [(suite.name, run) for suite, run in zip(suites, judged, strict=True)]
        repeats = [judged[0][0].timing.tests_s]
        for _ in range(self.repeats):
            ((again, _),), _, _ = self._run_suites(path, suites[:1], visible_s)
            repeats.append(again.timing.tests_s)
        return assemble(
            path,
            runs,
            copied,
            repeats,
            baseline=self.baseline,
            fail_closed=self.fail_closed,
            limits=self.limits,
            network=self.network,
            reference_failures=(
                sum(a.baseline_failures for a in self.applicability.values())
                if self.reference_baseline
                else None
            ),
            pytest_config=self._planner.pytest_config_record(
                judged[0][1].isolation.get("pytest_config"), self.tests
            ),
        )

    def score_many(
        self,
        candidates: Sequence[str | os.PathLike[str]],
        workers: int = 2,
        executor: Executor | None = None,
    ) -> Iterator[tuple[int, ScoreResult]]:
        """Score candidates ``workers`` at a time; yields ``(index, result)`` as each finishes.
        Each candidate's visible and held-out runs go at once, so up to ``2 * workers``
        sandboxes are alive together.

        With ``executor`` (any ``concurrent.futures.Executor``: a process pool, Dask's
        ``Client.get_executor()``), candidates go to its workers instead; each worker process
        builds this Evaluator once, with a warm parent of its own. Paths must be valid on the
        workers. A candidate that cannot be scored at all (a missing path) is raised before
        any work.
        """
        paths = [require_candidate(c, "candidate") for c in candidates]
        if workers < 1:
            raise ConfigError(f"workers must be at least 1, not {workers}")
        if executor is not None:
            # A partial of a module-level function: it must pickle, to reach other processes.
            remote = bounded(executor, functools.partial(score_on_worker, self.recipe), paths, 256)
            for index, text in remote:
                yield index, ScoreResult.from_json(text)
            return
        if self._warm is None or workers == 1:
            for index, path in enumerate(paths):
                yield index, self.score(path)
            return
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="scorewright") as pool:
            yield from bounded(pool, self.score, paths, 2 * workers)

    def close(self) -> None:
        """Stop the warm parent (also happens when this process exits)."""
        if self._warm is not None:
            self._warm.close()
            self._warm = None
        self._planner.close()  # runs from here on fork from this process, unprepared

    def __enter__(self) -> Evaluator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- runs --------------------------------------------------------------------------------

    def _suites(
        self,
        expected_visible: Sequence[tuple[str, bool]],
        select: Sequence[str] | None,
        *,
        with_heldout: bool,
    ) -> list[_Suite]:
        suites = [_Suite("visible", self.tests, expected_visible, select)]
        if self.heldout is not None and with_heldout:
            suites.append(_Suite("held-out", self.heldout, self.expected_heldout, None))
        return suites

    def _run_suites(
        self, candidate: Path, suites: Sequence[_Suite], share: float | None = None
    ) -> tuple[list[tuple[RunVerdict, ChildOutcome]], CopyReport, float]:
        """Run and judge the candidate on each suite, within limits.timeout_s in all (or
        ``share`` each); returns the judged runs, the first copy report and the visible
        run's time limit."""
        budget, grace = self.limits.timeout_s, self.limits.grace_s
        if share is not None or len(suites) == 1:
            shares = [share or budget] * len(suites)
        elif self._warm is not None:
            # Independent runs, so at once: each within the whole budget less the grace
            # period, and the call still keeps to limits.timeout_s.
            shares = [max(budget - grace, 0.1)] * len(suites)
        else:
            # One after the other, forked from this process: the visible run gets a share in
            # proportion to its tests, the held-out run whatever is left.
            started = time.monotonic()
            sizes = [len(suite.expected) for suite in suites]
            first = max(budget - 2 * grace, 0.1) * sizes[0] / sum(sizes)
            runs = [self._judged_run(candidate, suites[0], first)]
            left = budget - (time.monotonic() - started) - grace
            runs += [self._judged_run(candidate, suites[1], max(left, 0.1))]
            return [r for r, _ in runs], runs[0][1], first
        launched: list[_Launched] = []
        try:
            for suite, limit in zip(suites, shares, strict=True):
                launched.append(self._launch(candidate, suite.tests, (), limit, suite.select))
        finally:
            observed = _wait_all(launched)  # every run ends and its work dir goes, whatever
        judged = [
            (self._judge(suite, outcome, limit), outcome)
            for suite, outcome, limit in zip(suites, observed, shares, strict=True)
        ]
        return judged, launched[0].workspace.report, shares[0]

    def _judged_run(
        self, candidate: Path, suite: _Suite, timeout_s: float
    ) -> tuple[tuple[RunVerdict, ChildOutcome], CopyReport]:
        observed, copied = self._run(candidate, suite.tests, (), timeout_s, suite.select)
        return (self._judge(suite, observed, timeout_s), observed), copied

    def _judge(self, suite: _Suite, observed: ChildOutcome, timeout_s: float) -> RunVerdict:
        return judge(
            suite.expected,
            observed,
            timeout_s=timeout_s,
            reference_anchors=self.anchors.get(suite.name),
        )

    def _measure_reference(self) -> Baseline:
        """Run the reference on both suites: it must pass the tests it does not skip or xfail
        (or, as a baseline, those tests are not applicable either); its timing is the
        baseline and its anchored values the expectations."""
        reference = self.reference
        if reference is None:  # pragma: no cover - only called with a reference
            return Baseline(collected_s=None)
        baseline = Baseline(collected_s=None)
        suites = self._suites(self.expected_visible, None, with_heldout=True)
        # Each suite with the whole budget, at once through the warm parent.
        judged, _, _ = self._run_suites(reference, suites, share=self.limits.timeout_s)
        for suite, (verdict, _) in zip(suites, judged, strict=True):
            name = suite.name
            applicability = ReferenceOutcomes.of(verdict.records, baseline=self.reference_baseline)
            failing = applicability.failing
            odd = [a.not_plain for v in verdict.anchors.values() for a in v if a.not_plain]
            if verdict.error or failing or odd:
                problem = verdict.error or (
                    _reference_failure(failing)
                    if failing
                    else f"it anchors a {odd[0]}, not a plain value"
                )
                fix = "fix the reference or the tests"
                if verdict.ending == "timeout":
                    fix = "give the whole suite a longer budget (--timeout)"
                elif failing:
                    fix += ", or score against it as a baseline (--reference-baseline)"
                raise ConfigError(
                    f"the reference does not pass its own {name} tests ({problem}); {fix}"
                )
            self.anchors[name] = verdict.anchors
            self.applicability[name] = applicability
            if name == "visible":
                baseline = Baseline(collected_s=verdict.timing.collected_s)
        return baseline

    def _collect_suites(self) -> tuple[list[tuple[str, bool]], list[tuple[str, bool]]]:
        """The visible and held-out tests' ids (and held-out marks), collected at once."""
        suites = [(self.tests, False)] + ([(self.heldout, True)] if self.heldout else [])
        what = "the reference" if self.reference else "a stand-in module (pass a reference)"
        with tempfile.TemporaryDirectory(prefix="scorewright-stub-") as stub_dir:
            source = self.reference
            if source is None:  # a directory of stand-ins, one for each module
                source = Path(stub_dir)
                for name in self.modules:
                    Path(stub_dir, f"{name}.py").write_text(STUB, encoding="utf-8")
            launched: list[_Launched] = []
            try:
                for tests, _ in suites:
                    launched.append(
                        self._launch(source, tests, ("--collect-only",), self.limits.timeout_s)
                    )
            finally:
                observed = _wait_all(launched)
        found = [
            expected_ids(tests, outcome, all_heldout=all_heldout, what=what)
            for (tests, all_heldout), outcome in zip(suites, observed, strict=True)
        ]
        return found[0], found[1] if len(found) > 1 else []

    def _run(
        self,
        candidate: Path,
        tests: Path,
        extra_args: Iterable[str],
        timeout_s: float,
        select: Sequence[str] | None = None,
    ) -> tuple[ChildOutcome, CopyReport]:
        run = self._launch(candidate, tests, extra_args, timeout_s, select)
        return run.wait(), run.workspace.report

    def _launch(
        self,
        candidate: Path,
        tests: Path,
        extra_args: Iterable[str],
        timeout_s: float,
        select: Sequence[str] | None = None,
    ) -> _Launched:
        """Start a sandboxed run (through the warm parent; without one, run it to the end
        here); ``wait()`` on the result gives its outcome and removes its work dir."""
        workspace = self._planner.workspace(candidate, tests)
        try:
            spec = self._planner.spec(workspace, tests, tuple(extra_args), timeout_s, select)
            if self._warm is not None:
                return _Launched(workspace, self._warm.submit(spec))
            done: Future[ChildOutcome] = Future()
            done.set_result(run_sandboxed(spec))
            return _Launched(workspace, done)
        except BaseException:
            workspace.remove()
            raise


def _reference_failure(failing: Sequence[TestRecord]) -> str:
    first = failing[0]
    text = f"{len(failing)} test(s) fail, first {first.nodeid}: {first.outcome}"
    if first.message:
        text += f": {first.message.splitlines()[0][:200]}"
    if first.outcome == "timeout":
        text += "; a slow test needs a longer --test-timeout"
    elif "can't start new thread" in (first.message or ""):
        text += "; a test that starts many threads needs a higher --processes"
    return text


@dataclasses.dataclass(frozen=True)
class _Suite:
    """One suite to run a candidate on: its name, directory, expected ids and selection."""

    name: str
    tests: Path
    expected: Sequence[tuple[str, bool]]
    select: Sequence[str] | None


@dataclasses.dataclass(frozen=True)
class _Launched:
    workspace: Workspace
    future: Future[ChildOutcome]

    def wait(self) -> ChildOutcome:
        try:
            return self.future.result()
        finally:
            self.workspace.remove()


def _wait_all(launched: Sequence[_Launched]) -> list[ChildOutcome]:
    outcomes, errors = [], []
    for run in launched:
        try:
            outcomes.append(run.wait())
        except Exception as exc:  # the warm parent died: raised once every run is settled
            errors.append(exc)
    if errors:
        raise errors[0]
    return outcomes
