"""From pytest's per-phase reports to one outcome per test.

pytest reports each test in up to three phases (setup, call, teardown), plus one report per
subtest. :func:`~pytest_scorewright.protocol.phases.reduce_report` turns each into a plain
:class:`~pytest_scorewright.protocol.wire.PhaseReport`; :class:`OutcomeTracker` folds phase
reports into one :class:`TestRecord` per test.

The rules, in short: only ``passed`` counts as passed; a failing setup is an ``error``; a
failing teardown after a passing call is an ``error``; a test with a failing subtest is
``failed``; a pytest-timeout expiry is ``timeout``; a test expected but never reported is
``not_run``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pytest_scorewright._text import bound_message
from pytest_scorewright.protocol.wire import PhaseReport
from pytest_scorewright.result import Outcome, Phase, TestRecord


@dataclass
class _State:
    heldout: bool
    outcome: Outcome | None = None
    phase: Phase | None = None
    message: str = ""
    duration: float = 0.0
    cpu: float | None = None
    reported: bool = False
    setup_passed: bool = False
    subtests: dict[str, int] | None = None
    first_subtest_failure: str = ""


class OutcomeTracker:
    """Folds phase reports into one :class:`TestRecord` per test, in collection order.

    Example::

        tracker = OutcomeTracker()
        tracker.expect("test_a.py::test_one", heldout=False)
        tracker.add(reduce_report(report))  # for every report pytest logs
        records = tracker.records()
    """

    def __init__(self) -> None:
        self._states: dict[str, _State] = {}

    def expect(self, nodeid: str, *, heldout: bool) -> None:
        """Declare a collected test, so that it is ``not_run`` if it never reports."""
        state = self._states.get(nodeid)
        if state is None:
            self._states[nodeid] = _State(heldout=heldout)
        else:
            state.heldout = state.heldout or heldout

    def expect_all(self, items: Iterable[tuple[str, bool]]) -> None:
        for nodeid, heldout in items:
            self.expect(nodeid, heldout=heldout)

    def add(self, rep: PhaseReport) -> None:
        state = self._states.get(rep.nodeid)
        if state is None:
            state = self._states[rep.nodeid] = _State(heldout=rep.heldout)
        state.heldout = state.heldout or rep.heldout
        state.reported = True
        if rep.subtest:
            self._add_subtest(state, rep)
            return
        state.duration += rep.duration
        if rep.cpu is not None:
            state.cpu = rep.cpu  # the whole test's, on its teardown report
        if rep.when == "setup":
            self._add_setup(state, rep)
        elif rep.when == "call":
            self._add_call(state, rep)
        elif rep.when == "teardown":
            self._add_teardown(state, rep)

    def _add_setup(self, state: _State, rep: PhaseReport) -> None:
        if rep.outcome == "passed":
            state.setup_passed = True
        elif rep.outcome == "skipped":
            _decide(state, "xfailed" if rep.wasxfail else "skipped", "setup", rep.message)
        else:
            _decide(state, "timeout" if rep.timed_out else "error", "setup", rep.message)

    def _add_call(self, state: _State, rep: PhaseReport) -> None:
        if rep.outcome == "passed":
            _decide(state, "xpassed" if rep.wasxfail else "passed", "call", rep.message)
        elif rep.outcome == "skipped":
            _decide(state, "xfailed" if rep.wasxfail else "skipped", "call", rep.message)
        else:
            _decide(state, "timeout" if rep.timed_out else "failed", "call", rep.message)

    def _add_teardown(self, state: _State, rep: PhaseReport) -> None:
        if rep.outcome != "failed":
            return
        # A failing teardown spoils a test that had not already failed; a call failure stays
        # the headline when both happen (pytest then counts one failure and one error).
        if state.outcome in (None, "passed", "xpassed", "skipped", "xfailed"):
            _decide(state, "timeout" if rep.timed_out else "error", "teardown", rep.message)

    def _add_subtest(self, state: _State, rep: PhaseReport) -> None:
        if state.subtests is None:
            state.subtests = {}
        if rep.wasxfail and rep.outcome == "skipped":
            kind = "xfailed"
        elif rep.outcome == "failed" and rep.timed_out:
            kind = "timeout"
        else:
            kind = rep.outcome
        state.subtests[kind] = state.subtests.get(kind, 0) + 1
        if rep.outcome == "failed" and not state.first_subtest_failure:
            state.first_subtest_failure = rep.message

    def skip_collector(self, nodeid: str, message: str) -> None:
        """A module or class skipped while collecting (``pytest.skip(allow_module_level=True)``,
        ``importorskip``): pytest counts it as one skipped, and so do we."""
        state = self._states.setdefault(nodeid, _State(heldout=False))
        if state.outcome is None:
            _decide(state, "skipped", "collect", message)
            state.reported = True

    def interrupt(self, nodeid: str, outcome: Outcome, message: str) -> None:
        """The run ended while ``nodeid`` was in progress: it gets ``outcome`` unless it had
        already failed."""
        state = self._states.get(nodeid)
        if state is None or state.outcome in ("failed", "error", "timeout"):
            return
        if state.outcome is not None:
            phase: Phase = "teardown"
        else:
            phase = "call" if state.setup_passed else "setup"
        _decide(state, outcome, phase, message)
        state.reported = True

    def fail(self, nodeid: str, message: str) -> None:
        """The parent found the test wrong (an anchored value differs): it fails, unless it
        already ended worse."""
        state = self._states.get(nodeid)
        if state is None or state.outcome in ("failed", "error", "timeout", "not_run"):
            return
        if state.outcome is None and not state.reported:
            return
        _decide(state, "failed", "call", message)

    def records(self) -> list[TestRecord]:
        return [self._record(nodeid, state) for nodeid, state in self._states.items()]

    def _record(self, nodeid: str, state: _State) -> TestRecord:
        outcome, phase, message = state.outcome, state.phase, state.message
        failed_subtests = (state.subtests or {}).get("failed", 0) + (state.subtests or {}).get(
            "timeout", 0
        )
        # pytest 9 rewrites a passing parent of failed subtests to "failed" with the bare
        # message "contains N failed subtests", but only in the process that ran it and only
        # when its hook runs before ours; decide it here either way, with a useful message.
        generic = outcome == "failed" and message.startswith("contains ")
        if failed_subtests and (outcome in (None, "passed", "xpassed") or generic):
            outcome, phase = "failed", "call"
            plural = "s" if failed_subtests > 1 else ""
            message = f"{failed_subtests} failed subtest{plural}: {state.first_subtest_failure}"
        if outcome is None:
            # Reported setup but never a verdict: the session ended under the test.
            outcome, phase = "not_run", None
        return TestRecord(
            nodeid=nodeid,
            outcome=outcome,
            phase=phase,
            heldout=state.heldout,
            duration_s=round(state.duration, 6) if state.reported else None,
            message=bound_message(message) if message else None,
            subtests=dict(state.subtests) if state.subtests is not None else None,
            cpu_s=round(state.cpu, 3) if state.cpu is not None else None,
        )


def _decide(state: _State, outcome: Outcome, phase: Phase, message: str) -> None:
    state.outcome, state.phase, state.message = outcome, phase, message
