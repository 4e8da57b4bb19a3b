"""A candidate's runs, from launch to verdict: the budget split between its suites, the launch
(through the warm parent, or forked here), the wait, and the parent's judgement of each run.
Also the trusted collection of the suites' test ids, which is a run of its own."""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path

from pytest_scorewright.errors import InfrastructureError
from pytest_scorewright.integrity.verdict import RunVerdict, judge
from pytest_scorewright.limits import Limits
from pytest_scorewright.protocol.wire import MAX_MESSAGES, Anchor, ChildOutcome
from pytest_scorewright.result import CollectionError
from pytest_scorewright.sandbox.launch import run_sandboxed
from pytest_scorewright.sandbox.plan import RunPlanner
from pytest_scorewright.sandbox.workspace import CopyReport, Workspace, private_tempdir
from pytest_scorewright.suite.collect import STUB, expected_ids
from pytest_scorewright.warm.parent import WarmParent

#: Beyond a run's time limit and grace, how long its answer may take before the run is
#: given up (a loaded machine, a slow fork); only a lost job process ever needs it.
PATIENCE_S = 60.0
#: How long a stopped run may take to end (kill, reap, sweep) before it is given up.
_STOP_WAIT_S = 10.0
#: A candidate's run may send at least this many messages, and this many a test: the
#: parent spends ~16 us on each after the run, so the cap keeps that well within the grace
#: period for any suite whose reference fits in it.
_MESSAGE_FLOOR = 20_000
_MESSAGES_A_TEST = 10
#: How often a run's wait looks at its caller's cancel event.
_CANCEL_POLL_S = 0.05
#: The cancel event of the score under way in this thread (``Evaluator.score(cancel=)``).
_cancel: contextvars.ContextVar[threading.Event | None] = contextvars.ContextVar(
    "scorewright_cancel", default=None
)
#: What a cancelled score's result says.
CANCELLED = "not scored: the caller cancelled the call (it stopped waiting for it)"
#: Expected test ids and held-out marks of one suite.
Expected = Sequence[tuple[str, bool]]
#: One run as judged: the parent's verdict, and what the parent observed.
Judged = tuple[RunVerdict, ChildOutcome]


@dataclasses.dataclass(frozen=True)
class Suite:
    """One suite to run a candidate on: its name, directory, expected ids and selection."""

    name: str
    tests: Path
    expected: Expected
    select: Sequence[str] | None
    max_messages: int = MAX_MESSAGES
    #: More pytest arguments for its runs (the reference's trial apart stops at a failure).
    extra_args: tuple[str, ...] = ()


@contextlib.contextmanager
def cancelled_by(event: threading.Event | None) -> Iterator[None]:
    """Runs launched or waited for in this thread within the block stop, and none starts,
    once ``event`` is set: the call ends at once with ``CANCELLED``, its work dirs gone. A
    run forked here without a warm parent ends only at its own deadline."""
    token = _cancel.set(event)
    try:
        yield
    finally:
        _cancel.reset(token)


def _cancelled() -> bool:
    event = _cancel.get()
    return event is not None and event.is_set()


def message_cap(reference_sent: int, suite: Suite) -> int:
    """Most messages a candidate's run of ``suite`` may send: what its tests need (three a
    test, room for subtests and anchored values; twice what the reference's run sent), so
    the parent's work after a run stays proportional to the suite's."""
    floor = max(_MESSAGE_FLOOR, _MESSAGES_A_TEST * len(suite.expected), 2 * reference_sent)
    return min(MAX_MESSAGES, floor)


class Runner:
    """Launches, waits for and judges runs of one Evaluator's suites.

    Example::

        judged, copied, visible_s = runner.run_suites(path, suites, isolated=True, anchors={})
    """

    def __init__(self, planner: RunPlanner, warm: WarmParent | None, limits: Limits) -> None:
        self.planner = planner
        self.warm = warm
        self.limits = limits
        #: Set when scoring is cancelled: why no run may start any more.
        self.refusing: str | None = None

    def run_suites(
        self,
        candidate: Path,
        suites: Sequence[Suite],
        *,
        isolated: bool,
        anchors: Mapping[str, Mapping[str, list[Anchor]]],
        share: float | None = None,
    ) -> tuple[list[Judged], CopyReport, float]:
        """Run and judge the candidate on each suite, within limits.timeout_s in all (or
        ``share`` each); returns the judged runs, the first copy report and the visible
        run's time limit."""
        budget, grace = self.limits.timeout_s, self.limits.grace_s
        if share is None and len(suites) > 1 and self.warm is None:
            return self._one_after_the_other(candidate, suites, isolated, anchors)
        if share is not None or len(suites) == 1:
            shares = [share or budget] * len(suites)
        else:
            # Independent runs, so at once: each within the whole budget less the grace
            # period, and the call still keeps to limits.timeout_s.
            shares = [max(budget - grace, 0.1)] * len(suites)
        launched: list[Launched] = []
        try:
            for suite, limit in zip(suites, shares, strict=True):
                launched.append(self.launch(candidate, suite, suite.extra_args, limit, isolated))
        except BaseException:
            stop_all(launched)  # every run ends and its work dir goes, whatever
            raise
        observed = wait_all(launched)
        judged = [
            (self._judge(suite, outcome, limit, anchors, run.seen_root), outcome)
            for suite, outcome, limit, run in zip(suites, observed, shares, launched, strict=True)
        ]
        return judged, launched[0].workspace.report, shares[0]

    def side_by_side(
        self,
        candidates: Sequence[Path],
        suite: Suite,
        share: float,
        *,
        isolated: bool,
        anchors: Mapping[str, Mapping[str, list[Anchor]]],
    ) -> list[Judged]:
        """Each of ``candidates`` run on ``suite`` at the same time, each within ``share``:
        timings taken under the same load, so their ratio is the machine's load cancelled."""
        launched: list[Launched] = []
        try:
            for candidate in candidates:
                launched.append(self.launch(candidate, suite, suite.extra_args, share, isolated))
        except BaseException:
            stop_all(launched)
            raise
        observed = wait_all(launched)
        return [
            (self._judge(suite, outcome, share, anchors, run.seen_root), outcome)
            for outcome, run in zip(observed, launched, strict=True)
        ]

    def calibrate(self, limits: Limits, *, benchmarks: bool = True) -> None:
        """Later runs take ``limits`` (the per-test limit the reference calibrated), and time
        what a call's items cost only if the suite ``benchmarks``."""
        self.limits = limits
        self.planner.settings = dataclasses.replace(
            self.planner.settings, limits=limits, benchmarks=benchmarks
        )

    def run_reference(
        self, reference: Path | None, suites: Sequence[Suite], isolated: bool
    ) -> tuple[list[Judged], CopyReport]:
        """The reference's runs of ``suites``, each with the whole budget."""
        assert reference is not None  # noqa: S101 - only called with a reference
        judged, copied, _ = self.run_suites(
            reference, suites, isolated=isolated, anchors={}, share=self.limits.timeout_s
        )
        return judged, copied

    def _one_after_the_other(
        self,
        candidate: Path,
        suites: Sequence[Suite],
        isolated: bool,
        anchors: Mapping[str, Mapping[str, list[Anchor]]],
    ) -> tuple[list[Judged], CopyReport, float]:
        # Forked from this process: the visible run gets a share in proportion to its tests,
        # the held-out run whatever is left.
        budget, grace = self.limits.timeout_s, self.limits.grace_s
        started = time.monotonic()
        sizes = [len(suite.expected) for suite in suites]
        first = max(budget - 2 * grace, 0.1) * sizes[0] / sum(sizes)
        judged: list[Judged] = []
        copied: CopyReport | None = None
        for suite in suites:
            limit = first if not judged else max(budget - (time.monotonic() - started) - grace, 0.1)
            run = self.launch(candidate, suite, suite.extra_args, limit, isolated)
            observed = run.wait()
            judged.append((self._judge(suite, observed, limit, anchors, run.seen_root), observed))
            copied = copied or run.workspace.report
        assert copied is not None  # noqa: S101 - at least one suite
        return judged, copied, first

    def _judge(
        self,
        suite: Suite,
        observed: ChildOutcome,
        timeout_s: float,
        anchors: Mapping[str, Mapping[str, list[Anchor]]],
        root: str,
    ) -> RunVerdict:
        verdict = judge(
            suite.expected,
            observed,
            timeout_s=timeout_s,
            reference_anchors=anchors.get(suite.name),
            monitored=True,
        )
        observed.output = _relative_to(root)(observed.output)  # what assembly excerpts
        return without_work_dir(verdict, root)

    def launch(
        self,
        candidate: Path,
        suite: Suite,
        extra_args: Iterable[str],
        timeout_s: float,
        isolated: bool,
    ) -> Launched:
        """Start a sandboxed run (through the warm parent; without one, run it to the end
        here); ``wait()`` on the result gives its outcome and removes its work dir."""
        if self.refusing is not None:
            raise InfrastructureError(self.refusing)
        if _cancelled():
            raise InfrastructureError(CANCELLED)
        workspace = self.planner.workspace(candidate, suite.tests)
        try:
            spec = self.planner.spec(
                workspace,
                suite.tests,
                tuple(extra_args),
                timeout_s,
                suite.select,
                max_messages=suite.max_messages,
                isolated=isolated,
                suite=suite.name,
            )
            # The longest a run can take, with room for a busy machine; past it, the run is
            # stopped and lost (a hung job process would otherwise hang score()).
            patience = timeout_s + self.limits.grace_s + PATIENCE_S
            seen = str(self.planner.fixed_root or workspace.root)  # the run's own view
            if self.warm is not None:
                return Launched(workspace, self.warm.submit(spec), self.warm, patience, seen)
            done: Future[ChildOutcome] = Future()
            done.set_result(run_sandboxed(spec))
            return Launched(workspace, done, None, patience, seen)
        except BaseException:
            workspace.remove()
            raise

    def collect(
        self, suites: Sequence[tuple[Path, bool]], reference: Path | None, modules: Sequence[str]
    ) -> list[list[tuple[str, bool]]]:
        """Each suite's test ids (and held-out marks), collected at once by a trusted run
        with the reference, or with a stand-in module for each of ``modules``."""
        what = "the reference" if reference else "a stand-in module (pass a reference)"
        with private_tempdir("scorewright-stub-") as stub_dir:
            source = reference
            if source is None:  # a directory of stand-ins, one for each module
                source = Path(stub_dir)
                for name in modules:
                    Path(stub_dir, f"{name}.py").write_text(STUB, encoding="utf-8")
            launched: list[Launched] = []
            try:
                for tests, _ in suites:
                    suite = Suite("collection", tests, (), None)
                    # isolated=False: the trusted collection imports the reference
                    launched.append(
                        self.launch(
                            source, suite, ("--collect-only",), self.limits.timeout_s, False
                        )
                    )
            except BaseException:
                stop_all(launched)
                raise
            observed = wait_all(launched)
        return [
            expected_ids(tests, outcome, all_heldout=all_heldout, what=what)
            for (tests, all_heldout), outcome in zip(suites, observed, strict=True)
        ]


@dataclasses.dataclass(frozen=True)
class Launched:
    """A run under way: its work dir, its outcome to come, and who can stop it."""

    workspace: Workspace
    future: Future[ChildOutcome]
    warm: WarmParent | None
    patience: float
    #: The work dir's path as the run saw it.
    seen_root: str = ""

    def wait(self) -> ChildOutcome:
        event = _cancel.get()
        given_up = time.monotonic() + self.patience
        try:
            while True:
                left = given_up - time.monotonic()
                try:
                    return self.future.result(
                        timeout=max(0.0, min(left, _CANCEL_POLL_S) if event else left)
                    )
                except FutureTimeout:
                    if event is not None and event.is_set():
                        raise InfrastructureError(CANCELLED) from None
                    if time.monotonic() >= given_up:
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


def wait_all(launched: Sequence[Launched]) -> list[ChildOutcome]:
    """Every run's outcome. Whatever goes wrong while waiting (a run lost, an interrupt),
    every other run is stopped and waited for, and its work dir removed, before it is
    raised: nothing of a run outlives the call."""
    outcomes: list[ChildOutcome] = []
    try:
        for run in launched:
            outcomes.append(run.wait())
    except BaseException:
        stop_all(launched[len(outcomes) + 1 :])
        raise
    return outcomes


def stop_all(launched: Sequence[Launched]) -> None:
    for run in launched:
        try:
            run.stop()
        finally:
            run.workspace.remove()


def without_work_dir(verdict: RunVerdict, root: str) -> RunVerdict:
    """The run's messages with the paths of its work dir ``root`` as the run saw it made
    relative (``solution.py``, ``tests/test_x.py``): a random directory name is noise to
    the LLM that reads them, and would make two Evaluators' results of the same candidate
    differ (score_many's pipelines each have their own)."""
    if not root:
        return verdict
    top = root.rstrip("/") + "/"
    strip = _relative_to(root)
    verdict.records = [
        dataclasses.replace(r, message=strip(r.message)) if r.message and top in r.message else r
        for r in verdict.records
    ]
    verdict.collection_errors = [
        CollectionError(e.nodeid, strip(e.message)) for e in verdict.collection_errors
    ]
    verdict.error = strip(verdict.error) if verdict.error else verdict.error
    return verdict


def _relative_to(root: str) -> Callable[[str], str]:
    """``text`` with the paths below the work dir ``root`` relative to it (and the
    candidate's own relative to its directory)."""
    top = root.rstrip("/") + "/"

    def strip(text: str) -> str:
        if not root or top not in text:
            return text
        return text.replace(top + "candidate/", "").replace(top, "")

    return strip
