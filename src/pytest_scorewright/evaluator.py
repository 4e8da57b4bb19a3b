"""The evaluator: score an untrusted candidate with a trusted test suite, in a sandbox.

The Evaluator is the trusted parent. It never imports candidate code; it learns the expected
test ids from a trusted collection on first use, runs each candidate's visible and held-out
tests in separate sandboxed children, and decides every outcome itself (``scoring/``).
"""

from __future__ import annotations

import dataclasses
import functools
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Executor
from pathlib import Path
from typing import Any, NoReturn

from pytest_scorewright.errors import ConfigError
from pytest_scorewright.fanout.many_at_once import Fanout, refuse_unportable
from pytest_scorewright.fanout.pipelines import PipelineCache
from pytest_scorewright.integrity.codes import choose_policy
from pytest_scorewright.judge.assess import Judge
from pytest_scorewright.judge.attach import judged
from pytest_scorewright.limits import Limits
from pytest_scorewright.result import ScoreResult
from pytest_scorewright.results import repeats as repeated
from pytest_scorewright.sandbox.workspace import require_candidate
from pytest_scorewright.scoring import reference as references
from pytest_scorewright.scoring.assemble import ours, timed, unscored_result
from pytest_scorewright.scoring.candidates import SeenResults, source_file
from pytest_scorewright.scoring.evaluator_facts import EvaluatorFacts
from pytest_scorewright.scoring.objectives import ObjectiveSet, ObjectiveSpec
from pytest_scorewright.scoring.one_candidate import OneCandidate
from pytest_scorewright.scoring.prepared import Dirs, Learned, Prepared, prepare
from pytest_scorewright.scoring.runs import Suite, cancelled_by
from pytest_scorewright.scoring.settings import (
    OPTION_NAMES,
    EvaluatorSettings,
    PathLike,
    unknown_option,
)
from pytest_scorewright.suite.collect import module_name_mistake

#: The ``isolation`` choices (docs/isolation.md).
ISOLATIONS = references.ISOLATIONS
#: Every keyword option of the Evaluator (a test keeps it equal to the signature).
_OPTIONS = (*OPTION_NAMES, "judge")


class Evaluator(EvaluatorFacts):
    """Score candidate programs with a trusted pytest suite, each in a fresh sandbox.

    Example::

        evaluator = Evaluator("tests/", heldout="heldout/", reference="reference/")
        result = evaluator.score("candidate.py")  # a .py file or a directory
        print(result.signal("pass_rate"), result.integrity.flagged)

    Every option is keyword-only and documented on
    :class:`~pytest_scorewright.scoring.settings.EvaluatorSettings` (``heldout``,
    ``reference``, ``module``, ``limits``, ``isolation``, ``objectives``...). Building it
    checks the paths and options and forks nothing; :meth:`prepare` (or the first score)
    collects the suite once and measures the reference, so a setup mistake is a ConfigError
    then, never thousands of zero scores later.
    """

    def __init__(
        self,
        tests: PathLike,
        *,
        heldout: PathLike | None = None,
        reference: PathLike | None = None,
        module: str | Sequence[str] = "solution",
        limits: Limits | None = None,
        isolation: str = "auto",
        network: bool = False,
        warn_only: bool = False,
        fail_closed: bool = False,
        reference_baseline: bool = False,
        fail_to_pass: Sequence[str] = (),
        gold: PathLike | None = None,
        reference_repeats: int = 1,
        repeats: int = 0,
        env: Mapping[str, str] | None = None,
        plugins: Sequence[str] = ("pytest_timeout",),
        ini: Mapping[str, str] | None = None,
        support_files: Sequence[PathLike] | None = None,
        workdir: PathLike | None = None,
        namespaces: bool = True,
        require_isolation: bool | Sequence[str] = False,
        warm: bool = True,
        preload: Sequence[str] = (),
        dedupe: bool = True,
        coverage: bool = False,
        objectives: Mapping[str, ObjectiveSpec] | None = None,
        sandbox: str = "namespaces",
        judge: Judge | None = None,
        **unknown: NoReturn,
    ) -> None:
        if unknown:
            raise ConfigError(unknown_option(sorted(unknown)[0], _OPTIONS))
        # Every option as given, by name (the signature lists them all; a test keeps it so).
        given = {name: value for name, value in locals().items() if name in OPTION_NAMES}
        settings = EvaluatorSettings.of(tests, **given)
        if judge is not None and not isinstance(judge, Judge):
            raise ConfigError(f"judge must be a pytest_scorewright.Judge, not {judge!r}")
        #: The LLM judge (docs/judge.md): run here, in the parent, after a candidate's runs.
        self.judge = judge
        self._settings = settings
        self._dirs = Dirs.of(tests, settings)
        suites = self._dirs.suites
        # Loaded here, in the parent only, and never from a directory copied into runs.
        self._objectives = ObjectiveSet(
            settings.objectives, inside=[*suites, *(Path(p) for p in settings.support_files)]
        )
        self._file_mistake = module_name_mistake(suites, self._dirs.reference, settings.modules)
        self._seen = SeenResults(settings.dedupe)
        self._policy = choose_policy(warn_only=settings.warn_only, fail_closed=settings.fail_closed)
        # Nothing is forked until first use (prepare(), the first score): building one
        # where a process may fork later, or in a module many processes import, costs
        # nothing, and the work is done in the process that scores.
        self._lock = threading.Lock()
        self._ready: Prepared | None = None
        self._pipelines = PipelineCache()

    @classmethod
    def from_settings(cls, settings: EvaluatorSettings, *, judge: Judge | None = None) -> Evaluator:
        """The Evaluator of another's :attr:`settings` (as a pipeline or a worker builds it)."""
        if not isinstance(settings, EvaluatorSettings):
            raise ConfigError(f"from_settings takes an Evaluator's settings, not {settings!r:.80}")
        return cls(settings.tests, judge=judge, **settings.arguments())

    def prepare(self) -> Evaluator:
        """Probe the host, start the warm parent, collect the suite and measure the reference
        now rather than at the first score; a setup mistake is a ConfigError here, never
        thousands of zero scores later. Idempotent; returns this evaluator.

        A ``module`` the tests never import (where the reference directory provides the ones
        they do) is refused here too: a ``.py`` candidate would score 0 every time, and the
        module the tests import is right for a directory candidate as well."""
        if self._file_mistake is not None:
            raise ConfigError(self._file_mistake)
        self._prepared()
        return self

    def learned(self) -> Learned:
        """What :meth:`prepare` learned (the suites' test ids, the reference's runs, the
        calibrated limits): picklable, for :meth:`adopt` in another process."""
        return self._prepared().learned()

    def adopt(self, learned: Learned) -> Evaluator:
        """Prepare by taking what an Evaluator of the same options learned on this machine
        (:meth:`learned`), instead of collecting the suite and running the reference again:
        it then scores exactly as that one does. Returns this evaluator."""
        with self._lock:
            if self._ready is not None:
                raise ConfigError("adopt() must come before this Evaluator's first use")
            self._ready = prepare(self._settings, self._dirs, self._objectives, learned)
        return self

    def _prepared(self) -> Prepared:
        with self._lock:
            if self._ready is None:
                self._ready = prepare(self._settings, self._dirs, self._objectives)
            return self._ready

    # -- scoring -----------------------------------------------------------------------------

    def score(
        self,
        candidate: PathLike,
        *,
        only: Sequence[str] | None = None,
        heldout: bool = True,
        repeats: int = 1,
        cancel: threading.Event | None = None,
    ) -> ScoreResult:
        """Score one candidate: a ``.py`` file (run as ``<module>.py``) or a directory.

        ``only`` limits the visible run to those test ids (a quick first stage);
        ``heldout=False`` skips the held-out run; ``repeats=k`` measures it k times, each
        signal at its mean with a 95% interval and flaky tests named in ``extra.repeats``
        (results/repeats.py). ``cancel``: once another thread sets it (the caller stopped
        waiting), the call's runs stop and it returns at once, ``infrastructure: true``.
        """
        if repeats != 1:
            return self._repeated(candidate, repeats, only=only, heldout=heldout, cancel=cancel)
        path = require_candidate(candidate, "candidate")
        if self._file_mistake is not None and path.is_file():
            raise ConfigError(self._file_mistake)  # a setup mistake, never a candidate's 0
        ready = self._prepared()
        suites = ready.suites(self._dirs, only, heldout=heldout)
        key = self._seen.key(path, only, heldout)
        if (seen := self._seen.get(key, path)) is not None:
            return seen
        started = time.monotonic()
        try:
            with cancelled_by(cancel):
                result = timed(self._score(ready, path, suites), time.monotonic() - started)
            if self.judge is not None:
                result = judged(self.judge, result, path)
            self._seen.put(key, result)
            return result
        except ConfigError:
            raise
        except Exception as exc:  # ours or the machine's: said so, and the next is scored
            return ours(path, exc, time.monotonic() - started, limits=ready.limits)

    def confirm(self, candidate: PathLike, k: int = 5, **options: Any) -> ScoreResult:
        """Measure ``candidate`` k more times and credit each signal at the worse end of its
        95% interval (a pass rate at its Wilson lower bound): what a loop should promote on
        before calling a candidate its best. ``extra.repeats`` keeps the means and intervals;
        ``extra.confirmed`` says it was confirmed."""
        combined = self._repeated(candidate, k, **options)
        if not repeated.settled(combined):
            return combined
        confirmed = repeated.conservative(combined)
        return dataclasses.replace(confirmed, extra={**confirmed.extra, "confirmed": k})

    def _repeated(self, candidate: PathLike, k: int, **options: Any) -> ScoreResult:
        with self._seen.bypassed():  # each repeat a measurement of its own
            return repeated.measured(lambda: self.score(candidate, **options), k)

    def score_source(self, code: str, **options: Any) -> ScoreResult:
        """Score program text (an RL completion) as ``<module>.py``; options as :meth:`score`."""
        with source_file(code, self.module) as path:
            return self.score(path, **options)

    def _score(self, ready: Prepared, path: Path, suites: Sequence[Suite]) -> ScoreResult:
        """The candidate's trip, top to bottom: scoring/one_candidate.py."""
        return OneCandidate(
            ready, self._dirs, self._settings, self._policy, self._objectives
        ).score(path, suites)

    def score_many(
        self,
        candidates: Sequence[PathLike],
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
        ``Client.get_executor()``, a process pool), candidates go to its workers instead,
        each building this Evaluator once from the suite's bundle (docs/cluster.md;
        ``retries`` and ``deadline_s`` as :class:`~pytest_scorewright.fanout.dispatch.RemoteBatch`
        says). A candidate with no result gets one with ``infrastructure: true`` saying why.

        A candidate that cannot be scored at all (a missing path) is raised before any work.
        """
        paths = [require_candidate(c, "candidate") for c in candidates]
        if workers < 1:
            raise ConfigError(f"workers must be at least 1, not {workers}")
        refuse_unportable(executor, self._settings.portable)
        try:
            # Prepared here, before any work goes out: a setup mistake is raised once, and
            # never comes back from every worker as a candidate's failure.
            fanout = self._fanout(self._prepared())
            yield from fanout.run(paths, workers, executor, retries, deadline_s)
        except KeyboardInterrupt:
            # Ctrl-C: the runs in flight end now (their candidates have no result; those
            # yielded are the caller's), rather than the pool waiting for each to finish.
            self.cancel("interrupted")
            raise

    def _fanout(self, ready: Prepared) -> Fanout:
        judge, settings = self.judge, self._settings
        judging = (lambda result, path: judged(judge, result, path)) if judge else None
        unscored = functools.partial(unscored_result, limits=ready.limits)
        pipelines = functools.partial(self._pipelines.get, settings=settings, learned=ready.learned)
        return Fanout(self, ready, settings, judging, pipelines, unscored)

    def cancel(self, why: str = "scoring was cancelled") -> None:
        """End every score under way in other threads now, and close: each ends with a
        result with ``infrastructure: true`` saying ``why``, and no run starts from here on
        (not even without the warm parent)."""
        with self._lock:
            ready = self._ready
        if ready is not None:
            ready.runner.refusing = why
        self.close()

    def close(self) -> None:
        """Stop the warm parent and pipelines (done at exit too); later runs fork from here."""
        self._pipelines.close()
        with self._lock:
            if self._ready is not None:
                self._ready.close()

    def __enter__(self) -> Evaluator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
