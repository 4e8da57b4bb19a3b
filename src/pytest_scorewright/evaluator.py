"""The evaluator: score an untrusted candidate with a trusted test suite, in a sandbox.

The Evaluator is the trusted parent. It never imports candidate code; it learns the expected
test ids from a trusted collection when it is built, runs each candidate's visible tests and
held-out tests in separate sandboxed children, and decides every outcome itself.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any

from pytest_scorewright.errors import ConfigError, InfrastructureError
from pytest_scorewright.fanout.dispatch import RemoteBatch
from pytest_scorewright.fanout.window import bounded
from pytest_scorewright.integrity.codes import choose_policy
from pytest_scorewright.integrity.memorised import suite_literals
from pytest_scorewright.integrity.reasons import Baseline
from pytest_scorewright.integrity.relative import TrustedRun
from pytest_scorewright.integrity.static_scan import SourceScan, reference_scan
from pytest_scorewright.integrity.verdict import RunVerdict, judge
from pytest_scorewright.limits import Limits
from pytest_scorewright.result import ScoreResult, TestRecord
from pytest_scorewright.results.applicable import ReferenceOutcomes
from pytest_scorewright.results.assemble import assemble, infrastructure_result
from pytest_scorewright.results.objectives import ObjectiveSet, ObjectiveSpec, Submitted
from pytest_scorewright.sandbox import features, guarantees
from pytest_scorewright.sandbox.collect import STUB, expected_ids
from pytest_scorewright.sandbox.launch import run_sandboxed
from pytest_scorewright.sandbox.plan import RunPlanner, RunSettings
from pytest_scorewright.sandbox.wire import MAX_MESSAGES, Anchor, ChildOutcome
from pytest_scorewright.sandbox.workspace import (
    CopyReport,
    Workspace,
    require_candidate,
    require_dir,
    require_support,
)
from pytest_scorewright.warm.parent import WarmParent, take_prestarted

#: The ``isolation`` choices (docs/isolation.md).
ISOLATIONS = ("auto", "process", "in-process")
#: Beyond a run's time limit and grace, how long its answer may take before the run is
#: given up (a loaded machine, a slow fork); only a lost job process ever needs it.
_PATIENCE_S = 60.0
#: How long a stopped run may take to end (kill, reap, sweep) before it is given up.
_STOP_WAIT_S = 10.0
#: A candidate's run may send at least this many messages, and this many a test: the
#: parent spends ~16 us on each after the run, so the cap keeps that well within the grace
#: period for any suite whose reference fits in it.
_MESSAGE_FLOOR = 20_000
_MESSAGES_A_TEST = 10


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
    - ``warn_only``: record integrity evidence without acting on it (by default tamper
      evidence withdraws every test's credit and rejects the result, and gaming evidence
      rejects it; docs/integrity.md).
    - ``fail_closed``: also reject on hints, the weakest evidence.
    - ``env``: extra environment variables for every run (the rest is an allow-list).
    - ``plugins``: pytest plugins (module names) every run loads (pytest-timeout always is:
      it enforces ``limits.test_timeout_s``). Plugins are not autoloaded in a run: name
      those the suite needs (``pytest_asyncio.plugin``, ``anyio.pytest_plugin``, ...).
    - ``ini``: the suite's own pytest ini options (``{"asyncio_mode": "auto"}``); no ini file
      of the suite or the candidate is read. A multi-line value is a list.
    - ``workdir``: where run directories are made (default: the system temp dir).
    - ``namespaces``: ``False`` skips Linux namespaces even where they work (the degraded mode
      of docs/sandbox.md, for hosts that forbid them).
    - ``require_isolation``: refuse to score (``ConfigError``, before any run) where one of
      these guarantees cannot be met here: ``True`` for all, or names from
      ``sandbox.guarantees.GUARANTEES`` (docs/sandbox.md). Every result lists the guarantees
      its runs had in ``limits.sandbox``.
    - ``repeats``: run the visible tests this many more times, for timing checks.
    - ``support_files``: trusted files or directories copied next to every candidate.
    - ``warm``: fork every run from a warm parent (default); ``False`` forks from this
      process, which must then be single-threaded.
    - ``preload``: modules the warm parent imports once, for every run.
    - ``isolation``: ``"process"`` imports the candidate in a sandboxed process of its own,
      which the tests reach through proxies that pass plain data both ways, so nothing the
      candidate does can reach pytest, the tests or the verdict (docs/isolation.md);
      ``"in-process"`` imports it into the test process, guarded by the integrity layer;
      ``"auto"`` (the default) is ``process`` when the reference passes every test that way,
      otherwise ``in-process``. ``limits.sandbox.isolation`` says which, and why.
    - ``objectives``: name -> ``"PATH:FUNCTION"`` (a Python file beside the tests, imported
      only here), a callable, or an :class:`~pytest_scorewright.Objective`
      (``minimize=True`` for lower is better). Each scores the values tests submit under its
      name (``scorewright.submit(name, value)``), here in the parent; the signal is
      ``objective_<name>`` (docs/objectives.md). With a reference, every objective must score
      the reference's submissions, and the reference's benchmarks are the baseline of
      ``speedup``.
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
        warn_only: bool = False,
        env: Mapping[str, str] | None = None,
        plugins: Sequence[str] = ("pytest_timeout",),
        workdir: str | os.PathLike[str] | None = None,
        namespaces: bool = True,
        repeats: int = 0,
        support_files: Sequence[str | os.PathLike[str]] | None = None,
        warm: bool = True,
        preload: Sequence[str] = (),
        isolation: str = "auto",
        require_isolation: bool | Sequence[str] = False,
        reference_baseline: bool = False,
        ini: Mapping[str, str] | None = None,
        objectives: Mapping[str, ObjectiveSpec] | None = None,
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
            "warn_only": warn_only,
            "env": dict(env or {}),
            "plugins": list(plugins),
            "repeats": repeats,
            "support_files": [os.fspath(p) for p in support_files or ()],
            "preload": list(preload),
            "isolation": isolation,
            "require_isolation": require_isolation
            if isinstance(require_isolation, bool)
            else list(require_isolation),
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
        if isolation not in ISOLATIONS:
            raise ConfigError(
                f"isolation {isolation!r} is not one of {', '.join(ISOLATIONS)}; leave it at auto"
            )
        required = guarantees.required(require_isolation)
        self.module, self.modules = module, modules
        self.tests = require_dir(tests, "tests directory")
        self.heldout = require_dir(heldout, "held-out tests directory") if heldout else None
        # Loaded here, in the parent only, and never from a directory copied into runs.
        self.objectives = ObjectiveSet(
            objectives,
            inside=[
                self.tests,
                *([self.heldout] if self.heldout else []),
                *(Path(p) for p in support_files or ()),
            ],
        )
        self.recipe["objectives"] = self.objectives.recipe()
        self.reference = require_candidate(reference, "reference") if reference else None
        if reference_baseline and self.reference is None:
            raise ConfigError("reference_baseline needs a reference; pass reference= as well")
        self.reference_baseline = reference_baseline
        self.limits = limits or Limits()
        self.network = network
        self.policy = choose_policy(warn_only=warn_only, fail_closed=fail_closed)
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
        try:
            guarantees.refuse_unless_met(required, guarantees.assess(self._planner.planned_facts()))
        except ConfigError:
            self.close()
            raise
        self.expected_visible, self.expected_heldout = self._collect_suites()
        self.anchors: dict[str, dict[str, list[Anchor]]] = {}
        #: Whether candidates run apart from the tests (docs/isolation.md), and why.
        self.isolation = isolation
        self.isolated = isolation == "process"
        self.isolation_why = (
            "asked for" if isolation != "auto" else "no reference to try the suite apart with"
        )
        self._reference_messages: dict[str, int] = {}
        #: What the reference did in each suite's run: no evidence against any candidate.
        self.trusted: dict[str, TrustedRun] = {}
        self.reference_source: SourceScan | None = None
        self.reference_config: list[str] = []
        #: Per suite: the tests the reference says do not apply (results/applicable.py).
        self.applicability: dict[str, ReferenceOutcomes] = {}
        #: The reference's benchmark medians, the baseline of ``speedup``.
        self.bench_reference: dict[tuple[bool, str], float] = {}
        #: How many values the reference submitted, by (suite, test, name).
        self.submission_counts: dict[tuple[str, str, str], int] = {}
        #: Each objective's value for the reference.
        self.reference_objectives: dict[str, float] = {}
        self.baseline = self._measure_reference() if self.reference is not None else None
        self.literals = suite_literals(self.tests, self.reference_source)

    # -- public ------------------------------------------------------------------------------

    @property
    def guarantees(self) -> dict[str, str | None]:
        """Each sandbox guarantee (``sandbox.guarantees.GUARANTEES``) of this evaluator's
        runs: None where it holds here, else why not."""
        return guarantees.assess(self._planner.planned_facts())

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
        started = time.monotonic()
        try:
            return self._score(path, suites)
        except ConfigError:
            raise
        except Exception as exc:
            # Ours or the machine's, never the candidate's: this candidate gets a result
            # that says so, and the Evaluator goes on scoring the next (its warm parent is
            # started again if it died).
            if isinstance(exc, InfrastructureError):
                error = str(exc)
            else:
                error = f"scorewright failed ({type(exc).__name__}: {exc}); please report it"
            return infrastructure_result(
                path, error, time.monotonic() - started, limits=self.limits
            )

    def _score(self, path: Path, suites: Sequence[_Suite]) -> ScoreResult:
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
            policy=self.policy,
            trusted=self.trusted,
            reference_source=self.reference_source,
            reference_config=self.reference_config,
            literals=self.literals,
            limits=self.limits,
            network=self.network,
            reference_failures=(
                sum(a.baseline_failures for a in self.applicability.values())
                if self.reference_baseline
                else None
            ),
            bench_reference=self.bench_reference if self.reference is not None else None,
            objectives=self.objectives,
            submission_counts=self.submission_counts if self.reference is not None else None,
            pytest_config=self._planner.pytest_config_record(
                judged[0][1].isolation.get("pytest_config"), self.tests
            ),
            isolation=("process" if self.isolated else "in-process", self.isolation_why),
        )

    def score_many(
        self,
        candidates: Sequence[str | os.PathLike[str]],
        workers: int = 2,
        executor: Executor | None = None,
        *,
        retries: int = 2,
        deadline_s: float | None = None,
    ) -> Iterator[tuple[int, ScoreResult]]:
        """Score candidates ``workers`` at a time; yields ``(index, result)`` as each finishes,
        exactly once each. Each candidate's visible and held-out runs go at once, so up to
        ``2 * workers`` sandboxes are alive together.

        With ``executor`` (any ``concurrent.futures.Executor``: Dask's
        ``Client.get_executor()``, a process pool), candidates go to its workers instead
        (docs/cluster.md): the suite travels once to each worker as a bundle keyed by its
        hash, each candidate as its files, so no worker needs this machine's files; each
        worker builds this Evaluator once, with a warm parent of its own. A try its worker
        loses (killed, out of memory), or that fails for a reason of ours, goes again up to
        ``retries`` more times; a try with no answer ``deadline_s`` after a worker could
        have started it is given up (default: what the slowest honest try can take,
        building the worker's Evaluator included). A candidate that still has no result gets
        one with ``ok: false`` and ``infrastructure: true`` saying what happened. ``workers``
        is then how many the executor runs at once, where it cannot be asked (Dask and the
        standard pools are asked).

        A candidate that cannot be scored at all (a missing path) is raised before any work.
        """
        paths = [require_candidate(c, "candidate") for c in candidates]
        if workers < 1:
            raise ConfigError(f"workers must be at least 1, not {workers}")
        if executor is not None and not self.objectives.portable:
            raise ConfigError(
                "objectives given as callables cannot go to an executor's workers; give them "
                "as PATH:FUNCTION"
            )
        # One candidate never stops the others: whatever goes wrong with one (its worker
        # lost, a bug of ours) becomes its own result, and the rest are scored.
        if executor is not None:
            yield from RemoteBatch(
                executor,
                self.recipe,
                paths,
                limits=self.limits,
                retries=retries,
                deadline_s=deadline_s if deadline_s is not None else self._remote_deadline_s(),
                slots=workers,
                unscored=self._unscored,
            )
            return
        if self._warm is None or workers == 1:
            for index, path in enumerate(paths):
                try:
                    result = self.score(path)
                except Exception as exc:
                    result = self._unscored(path, exc)
                yield index, result
            return
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="scorewright") as pool:
            yield from bounded(pool, self.score, paths, 2 * workers, failed=self._unscored)

    def _remote_deadline_s(self) -> float:
        """The longest one try on a worker may take: building the Evaluator there (the
        trusted collection, then the reference's runs, twice when ``isolation`` is auto),
        then the candidate's runs and repeats, each run at most its time limit, its grace
        period and our patience; and a minute for the transfer."""
        run = self.limits.timeout_s + self.limits.grace_s + _PATIENCE_S
        return (4 + self.repeats) * run + 60.0

    def _unscored(self, path: Path, exc: BaseException) -> ScoreResult:
        """The result of a candidate of a batch that raised instead of being scored."""
        if isinstance(exc, ConfigError):  # the path went away meanwhile: the caller's
            return infrastructure_result(path, str(exc), 0.0, limits=self.limits, ours=False)
        error = str(exc) if isinstance(exc, InfrastructureError) else f"{type(exc).__name__}: {exc}"
        return infrastructure_result(path, f"could not be scored: {error}", 0.0, limits=self.limits)

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
        return [
            dataclasses.replace(s, max_messages=self._message_cap(s.name, len(s.expected)))
            for s in suites
        ]

    def _message_cap(self, suite: str, tests: int) -> int:
        """Most messages a candidate's run of ``suite`` may send: what its tests need
        (three a test, room for subtests and anchored values; twice what the reference
        sent), so the parent's work after a run stays proportional to the suite's."""
        sent = self._reference_messages.get(suite, 0)
        return min(MAX_MESSAGES, max(_MESSAGE_FLOOR, _MESSAGES_A_TEST * tests, 2 * sent))

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
                launched.append(self._launch(candidate, suite, suite.extra_args, limit))
        except BaseException:
            _stop_all(launched)  # every run ends and its work dir goes, whatever
            raise
        observed = _wait_all(launched)
        judged = [
            (self._judge(suite, outcome, limit), outcome)
            for suite, outcome, limit in zip(suites, observed, shares, strict=True)
        ]
        return judged, launched[0].workspace.report, shares[0]

    def _judged_run(
        self, candidate: Path, suite: _Suite, timeout_s: float
    ) -> tuple[tuple[RunVerdict, ChildOutcome], CopyReport]:
        run = self._launch(candidate, suite, suite.extra_args, timeout_s)
        observed = run.wait()
        return (self._judge(suite, observed, timeout_s), observed), run.workspace.report

    def _judge(self, suite: _Suite, observed: ChildOutcome, timeout_s: float) -> RunVerdict:
        return judge(
            suite.expected,
            observed,
            timeout_s=timeout_s,
            reference_anchors=self.anchors.get(suite.name),
            monitored=True,
        )

    def _measure_reference(self) -> Baseline:
        """Run the reference on both suites: it must pass the tests it does not skip or xfail
        (or, as a baseline, those tests are not applicable either); its timing is the
        baseline and its anchored values the expectations. With ``isolation="auto"`` it also
        decides the isolation: by process when the reference runs every test that way as in
        process (it passes them; as a baseline, it fails the same ones)."""
        if self.isolation != "in-process":
            in_process = None
            if self.reference_baseline and self.isolation == "auto":
                in_process = self._reference_runs(isolated=False)
                in_process.refuse_if_unusable()
            apart = self._reference_runs(isolated=True)
            problem = apart.problem
            if problem is None and in_process is not None:
                problem = apart.differs_from(in_process)
            if problem is None:
                self.isolated = True
                self.isolation_why = "the reference passes every test with the candidate apart"
                return self._take_reference(apart)
            if self.isolation == "process":
                raise ConfigError(
                    f"the reference does not pass its tests with isolation by process "
                    f"({problem}); use isolation 'auto' or 'in-process'"
                )
            self.isolation_why = f"the reference fails with the candidate apart: {problem}"
            if in_process is not None:
                self.isolated = False
                return self._take_reference(in_process)
        reference = self._reference_runs(isolated=False)
        reference.refuse_if_unusable()
        return self._take_reference(reference)

    def _reference_runs(self, *, isolated: bool) -> _ReferenceRuns:
        """The reference's runs on both suites (each with the whole budget, at once through
        the warm parent), with what the tests it runs say about applicability, and what keeps
        it from passing, if anything."""
        assert self.reference is not None  # noqa: S101 - only called with a reference
        self.isolated = isolated
        # A trial apart stops at its first failure (-x): it then only decides the isolation,
        # and a suite that needs the candidate in process is told so at once. Not as a
        # baseline: there failures are expected, and the runs apart are compared whole.
        trial: tuple[str, ...] = ()
        if isolated and self.isolation == "auto" and not self.reference_baseline:
            trial = ("-x",)
        suites = [
            # trusted: as much as it sends
            dataclasses.replace(s, max_messages=MAX_MESSAGES, extra_args=trial)
            for s in self._suites(self.expected_visible, None, with_heldout=True)
        ]
        judged, copied, _ = self._run_suites(self.reference, suites, share=self.limits.timeout_s)
        found = _ReferenceRuns(runs=[], copied=copied)
        for suite, (verdict, observed) in zip(suites, judged, strict=True):
            name = suite.name
            self._reference_messages[name] = len(observed.messages)
            found.runs.append((name, verdict))
            odd_stream = [r for r in verdict.reasons if r.severity == "tamper"]
            if odd_stream:
                # Our child code never does this on its own: a suite that makes it happen would
                # hide the same evidence from every candidate, so it is refused, loudly.
                raise ConfigError(
                    f"the reference's {name} run shows {odd_stream[0].code} "
                    f"({odd_stream[0].detail}): scorewright cannot judge candidates on this "
                    "suite; report it with the suite"
                )
            applicability = ReferenceOutcomes.of(verdict.records, baseline=self.reference_baseline)
            found.applicability[name] = applicability
            failing = applicability.failing
            odd = [a.not_plain for v in verdict.anchors.values() for a in v if a.not_plain]
            if found.problem is None and (verdict.error or failing or odd):
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
                found.problem, found.fix = f"{name} tests ({problem})", fix
        return found

    def _take_reference(self, reference: _ReferenceRuns) -> Baseline:
        assert self.reference is not None  # noqa: S101 - only called with a reference
        self.reference_source = reference_scan(self.reference)
        self.reference_config = list(reference.copied.config_files)
        baseline = Baseline(collected_s=None)
        for name, verdict in reference.runs:
            applicability = reference.applicability[name]
            self.anchors[name] = verdict.anchors
            self.trusted[name] = TrustedRun.of(verdict)
            self.applicability[name] = applicability
            if name == "visible":
                baseline = Baseline(collected_s=verdict.timing.collected_s)
        self._take_reference_objectives(reference.runs)
        return baseline

    def _take_reference_objectives(self, runs: Sequence[tuple[str, RunVerdict]]) -> None:
        """The reference's benchmarks (the baseline of speedup), what it submitted where, and
        each objective's value for it: an objective that cannot score it is a ConfigError."""
        submitted = []
        for name, verdict in runs:
            heldout = {r.nodeid: r.heldout for r in verdict.records}
            for record in verdict.records:
                if record.benchmark is not None and record.passed:
                    self.bench_reference[(record.heldout, record.nodeid)] = (
                        record.benchmark.median_s
                    )
            for s in verdict.submissions:
                key = (name, s.test, s.name)
                self.submission_counts[key] = self.submission_counts.get(key, 0) + 1
                submitted.append(Submitted(s.test, heldout.get(s.test, False), s.name, s.value))
        if not self.objectives:
            return
        records = [r for _, verdict in runs for r in verdict.records]
        _, scored = self.objectives.score(submitted, records)
        for found in scored:
            if found.value is None:
                raise ConfigError(
                    f"with the reference, objective {found.name!r} has no value: {found.error}; "
                    "check the name the tests submit under and the objective function"
                )
            self.reference_objectives[found.name] = found.value

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
                    suite = _Suite("collection", tests, (), None)
                    launched.append(
                        self._launch(
                            source,
                            suite,
                            ("--collect-only",),
                            self.limits.timeout_s,
                            isolated=False,  # the trusted collection imports the reference
                        )
                    )
            except BaseException:
                _stop_all(launched)
                raise
            observed = _wait_all(launched)
        found = [
            expected_ids(tests, outcome, all_heldout=all_heldout, what=what)
            for (tests, all_heldout), outcome in zip(suites, observed, strict=True)
        ]
        return found[0], found[1] if len(found) > 1 else []

    def _launch(
        self,
        candidate: Path,
        suite: _Suite,
        extra_args: Iterable[str],
        timeout_s: float,
        *,
        isolated: bool | None = None,
    ) -> _Launched:
        """Start a sandboxed run (through the warm parent; without one, run it to the end
        here); ``wait()`` on the result gives its outcome and removes its work dir."""
        workspace = self._planner.workspace(candidate, suite.tests)
        apart = self.isolated if isolated is None else isolated
        try:
            spec = self._planner.spec(
                workspace,
                suite.tests,
                tuple(extra_args),
                timeout_s,
                suite.select,
                max_messages=suite.max_messages,
                isolated=apart,
            )
            # The longest a run can take, with room for a busy machine; past it, the run is
            # stopped and lost (a hung job process would otherwise hang score()).
            patience = timeout_s + self.limits.grace_s + _PATIENCE_S
            if self._warm is not None:
                return _Launched(workspace, self._warm.submit(spec), self._warm, patience)
            done: Future[ChildOutcome] = Future()
            done.set_result(run_sandboxed(spec))
            return _Launched(workspace, done, None, patience)
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


@dataclasses.dataclass
class _ReferenceRuns:
    """The reference's runs of both suites, as judged, and whether they make it usable."""

    runs: list[tuple[str, RunVerdict]]
    copied: CopyReport
    applicability: dict[str, ReferenceOutcomes] = dataclasses.field(default_factory=dict)
    #: What keeps it from being the reference ("visible tests (...)"), and the fix.
    problem: str | None = None
    fix: str = ""

    def refuse_if_unusable(self) -> None:
        if self.problem is not None:
            raise ConfigError(f"the reference does not pass its own {self.problem}; {self.fix}")

    def differs_from(self, other: _ReferenceRuns) -> str | None:
        """Where a baseline taken apart differs from the one taken in process."""
        for name, mine in self.applicability.items():
            theirs = other.applicability.get(name)
            if theirs is None or set(mine.excluded) == set(theirs.excluded):
                continue
            extra = sorted(set(mine.excluded) - set(theirs.excluded))
            first = extra[0] if extra else sorted(set(theirs.excluded) - set(mine.excluded))[0]
            return f"{name} tests: {first} does not fare apart as it does in process"
        return None


@dataclasses.dataclass(frozen=True)
class _Suite:
    """One suite to run a candidate on: its name, directory, expected ids and selection."""

    name: str
    tests: Path
    expected: Sequence[tuple[str, bool]]
    select: Sequence[str] | None
    max_messages: int = MAX_MESSAGES
    #: More pytest arguments for its runs (the reference's trial apart stops at a failure).
    extra_args: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class _Launched:
    workspace: Workspace
    future: Future[ChildOutcome]
    warm: WarmParent | None
    patience: float

    def wait(self) -> ChildOutcome:
        try:
            return self.future.result(timeout=self.patience)
        except FutureTimeout:
            raise InfrastructureError(
                f"a run gave no answer within {self.patience:.0f}s; it was stopped"
            ) from None
        finally:
            self.stop()  # nothing to do unless it was given up, or interrupted
            self.workspace.remove()

    def stop(self) -> None:
        """End the run now, if it is still going, and wait (a little) until it has."""
        if self.warm is not None and not self.future.done():
            self.warm.stop(self.future)
            with contextlib.suppress(Exception):
                self.future.result(timeout=_STOP_WAIT_S)


def _wait_all(launched: Sequence[_Launched]) -> list[ChildOutcome]:
    """Every run's outcome. Whatever goes wrong while waiting (a run lost, an interrupt),
    every other run is stopped and waited for, and its work dir removed, before it is
    raised: nothing of a run outlives the call."""
    outcomes: list[ChildOutcome] = []
    try:
        for run in launched:
            outcomes.append(run.wait())
    except BaseException:
        _stop_all(launched[len(outcomes) + 1 :])
        raise
    return outcomes


def _stop_all(launched: Sequence[_Launched]) -> None:
    for run in launched:
        try:
            run.stop()
        finally:
            run.workspace.remove()
