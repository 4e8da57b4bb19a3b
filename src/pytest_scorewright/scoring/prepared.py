"""What an Evaluator learns on first use, and how it learns it: the host's capabilities, the
warm parent and run planner, the trusted collection of the suites' test ids, the reference's
runs, and the per-test limit calibrated from them."""

from __future__ import annotations

import dataclasses
import functools
import secrets
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_scorewright.errors import ConfigError
from pytest_scorewright.limits import Limits
from pytest_scorewright.protocol.wire import MAX_MESSAGES
from pytest_scorewright.sandbox import guarantees, host, leftovers
from pytest_scorewright.sandbox.gvisor import VAR_TMP, GvisorSandbox
from pytest_scorewright.sandbox.gvisor import features as gvisor_features
from pytest_scorewright.sandbox.plan import RunPlanner
from pytest_scorewright.sandbox.workspace import require_candidate, require_dir
from pytest_scorewright.scoring import kept_times
from pytest_scorewright.scoring import reference as references
from pytest_scorewright.scoring.candidates import content_key
from pytest_scorewright.scoring.objectives import ObjectiveSet
from pytest_scorewright.scoring.runs import Expected, Judged, Runner, Suite, message_cap
from pytest_scorewright.scoring.settings import EvaluatorSettings, PathLike
from pytest_scorewright.warm.parent import WarmParent, take_prestarted

#: Directories pytest and Python leave beside a suite: not part of what a task is.
CACHE_DIRS = frozenset({"__pycache__", ".pytest_cache"})


@dataclasses.dataclass(frozen=True)
class Dirs:
    """The trusted directories an Evaluator was given."""

    tests: Path
    heldout: Path | None
    reference: Path | None
    #: The baseline reference's fix, trusted too (EvaluatorSettings.gold).
    gold: Path | None = None

    @classmethod
    def of(cls, tests: PathLike, settings: EvaluatorSettings) -> Dirs:
        """The directories ``settings`` name, each checked (a one-line ConfigError)."""
        heldout, reference = settings.heldout, settings.reference
        return cls(
            require_dir(tests, "tests directory"),
            require_dir(heldout, "held-out tests directory") if heldout else None,
            require_candidate(reference, "reference") if reference else None,
            require_candidate(settings.gold, "gold") if settings.gold else None,
        )

    @property
    def suites(self) -> list[Path]:
        return [t for t in (self.tests, self.heldout) if t is not None]

    @property
    def trusted(self) -> list[Path]:
        """Every directory no candidate may see: the suites and the trusted programs."""
        return [*self.suites, *(p for p in (self.reference, self.gold) if p is not None)]

    def runs(
        self,
        visible: Expected,
        heldout: Expected | None,
        select: Sequence[str] | None,
        messages: Mapping[str, int] | None,
    ) -> list[Suite]:
        """The runs of one score (no held-out run where ``heldout`` is None), each capped
        at a multiple of what the reference sent; ``messages`` None: the reference's own
        runs, trusted to send as much as they do."""
        suites = [Suite("visible", self.tests, visible, select)]
        if self.heldout is not None and heldout is not None:
            suites.append(Suite("held-out", self.heldout, heldout, None))
        return [
            dataclasses.replace(
                s,
                max_messages=MAX_MESSAGES
                if messages is None
                else message_cap(messages.get(s.name, 0), s),
            )
            for s in suites
        ]


@dataclasses.dataclass(frozen=True)
class Prepared:
    """Everything an Evaluator learns before its first candidate."""

    runner: Runner
    features: host.Features
    use_namespaces: bool
    expected_visible: Expected
    expected_heldout: Expected
    reference: references.Reference
    limits: Limits

    def run(
        self, candidate: Path, suites: Sequence[Suite], share: float | None = None
    ) -> tuple[list[Judged], Any, float]:
        reference = self.reference
        return self.runner.run_suites(
            candidate, suites, isolated=reference.isolated, anchors=reference.anchors, share=share
        )

    def close(self) -> None:
        close_runner(self.runner)

    def suites(self, dirs: Dirs, only: Sequence[str] | None, *, heldout: bool) -> list[Suite]:
        """The runs of one score: the visible tests (``only`` those ids, a quick first
        stage; an id the suite lacks is a ConfigError) and, unless ``heldout`` is False, the
        held-out ones."""
        visible = self.expected_visible
        if only is not None:
            wanted = set(only)
            unknown = wanted - {nodeid for nodeid, _ in visible}
            if unknown:
                raise ConfigError(f"no visible test {sorted(unknown)[0]!r}; use ids the suite has")
            visible = [e for e in visible if e[0] in wanted]
        select = [nodeid for nodeid, _ in visible] if only is not None else None
        return dirs.runs(
            visible,
            self.expected_heldout if heldout else None,
            select,
            self.reference.messages,
        )

    def learned(self) -> Learned:
        return Learned(
            self.expected_visible,
            self.expected_heldout,
            self.reference,
            self.limits,
            self.runner.planner.settings.round_key,
        )


@dataclasses.dataclass(frozen=True)
class Learned:
    """What :func:`prepare` learns from the suites and the reference, none of it tied to a
    process: another process of the same machine that adopts it scores exactly as this one
    does, without collecting or running the reference again (fanout/pipelines.py)."""

    expected_visible: Expected
    expected_heldout: Expected
    reference: references.Reference
    limits: Limits
    #: The key of the fresh-argument rounds' seeds the reference's runs were made with
    #: (protocol/wire.py ``SandboxSpec``): an adopter's runs must use it too.
    round_key: str = ""


def prepare(
    settings: EvaluatorSettings,
    dirs: Dirs,
    objectives: ObjectiveSet,
    learned: Learned | None = None,
) -> Prepared:
    """Probe the host, start the warm parent, collect the suites and learn the reference
    (or adopt what another process ``learned``); a setup mistake is a ConfigError."""
    suites = dirs.suites
    # Work dirs a dead caller left when every cleaner died with it (sandbox/leftovers.py).
    leftovers.sweep(Path(settings.workdir) if settings.workdir else None)
    if settings.sandbox == "gvisor" and not settings.workdir:  # its bases, not in the temp dir
        leftovers.sweep(Path(VAR_TMP))
    gvisor = gvisor_sandbox(settings, dirs) if settings.sandbox == "gvisor" else None
    features = gvisor_features() if gvisor is not None else host.probe()
    use_namespaces = settings.namespaces and features.namespaces_unavailable is None
    # Before any process starts: a setting this host cannot honour is refused in one line.
    run_settings = settings.run_settings(features, use_namespaces=use_namespaces)
    # Every run is forked by the warm parent, a clean single-threaded process; warm=False
    # forks from this process instead (which must then be single-threaded).
    warm = None
    if gvisor is not None:
        warm = WarmParent(settings.preload, wrapper=gvisor)
    elif settings.warm:
        warm = take_prestarted(settings.preload) or WarmParent(settings.preload)
    # A new key for every Evaluator that learns; one that adopts takes the learner's.
    round_key = learned.round_key if learned is not None else secrets.token_hex(16)
    if gvisor is not None:  # the work dirs in the base it shares with the host
        run_settings = dataclasses.replace(run_settings, workdir=gvisor.workdir, gvisor=True)
    planner = RunPlanner(
        dataclasses.replace(run_settings, round_key=round_key),
        suites=suites,
        trusted=dirs.trusted,
        warm=warm is not None,
    )
    runner = Runner(planner, warm, settings.limits)
    try:
        required = guarantees.required(settings.require_isolation)
        guarantees.refuse_unless_met(required, guarantees.assess(planner.planned_facts()))
        if learned is None:
            learned = _learn(runner, settings, dirs, objectives)
        # Only the benchmark fixture uses what an item of a call costs, and timing it costs
        # each candidate process ~3 ms: where the reference benchmarked nothing, a test that
        # does so all the same subtracts no item's cost (reads slower, never faster).
        reference = learned.reference
        benchmarks = not reference.present or bool(reference.bench)
        runner.calibrate(learned.limits, benchmarks=benchmarks)
    except BaseException:
        close_runner(runner)
        raise
    return Prepared(
        runner=runner,
        features=features,
        use_namespaces=use_namespaces,
        expected_visible=learned.expected_visible,
        expected_heldout=learned.expected_heldout,
        reference=learned.reference,
        limits=learned.limits,
    )


def gvisor_sandbox(settings: EvaluatorSettings, dirs: Dirs) -> GvisorSandbox:
    """The Evaluator's gVisor sandbox, not yet started: its view hides the suites and the
    reference (a one-line ConfigError where gVisor cannot be used here)."""
    return GvisorSandbox(dirs.trusted, settings.workdir)


def _learn(
    runner: Runner, settings: EvaluatorSettings, dirs: Dirs, objectives: ObjectiveSet
) -> Learned:
    """The suites' test ids, from a trusted collection, and the reference's runs."""
    suites = dirs.suites
    found = runner.collect(
        [(s, s == dirs.heldout) for s in suites], dirs.reference, settings.modules
    )
    visible, heldout = found[0], (found[1] if len(found) > 1 else [])
    if settings.limits.test_timeout_s is None:
        # The reference's own tests have no limit but the budget: its slowest test sets its
        # own limit for candidates (Limits.calibrated), whatever it takes.
        runner.calibrate(
            dataclasses.replace(settings.limits, test_timeout_s=settings.limits.timeout_s)
        )
    runs = dirs.runs(visible, heldout, None, None)
    reference = references.learn(
        functools.partial(runner.run_reference, dirs.reference),
        runs,
        dirs.reference,
        tests=dirs.tests,
        isolation=settings.isolation,
        baseline=settings.reference_baseline,
        objectives=objectives,
        repeats=settings.reference_repeats,
        measured=settings.fail_to_pass,
    )
    if dirs.gold is not None:
        judged, _ = runner.run_reference(dirs.gold, runs, reference.isolated)
        reference = references.witnessed(reference, [s.name for s in runs], judged)
    # Candidates' runs take each test's own limits, from the reference's time for it: as
    # this task's first preparation on this machine measured it (kept_times.py), so that
    # its limits do not change from one preparation to the next.
    times = reference.test_times
    if settings.limits.test_timeout_s is None:
        times = kept_times.kept(_task_key(settings, dirs), times)
    limits = settings.limits.calibrated(times)
    return Learned(visible, heldout, reference, limits, runner.planner.settings.round_key)


def _task_key(settings: EvaluatorSettings, dirs: Dirs) -> str | None:
    """The key of this task's kept times: its suites' and reference's bytes (not the
    bytecode pytest may have left beside them) and every setting."""
    digests = [content_key(p, skip=CACHE_DIRS) for p in (*dirs.suites, dirs.reference) if p]
    content = None if None in digests else repr(digests)
    return kept_times.task_key(content, repr(settings))


def close_runner(runner: Runner) -> None:
    if runner.warm is not None:
        runner.warm.close()
        runner.warm = None
    runner.planner.close()  # runs from here on fork from this process, unprepared
