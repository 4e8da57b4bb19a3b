"""Each test's own limits, in the test process: its wall time through pytest-timeout, its CPU
time here, and the CPU time every test took, for the reference's calibration.

A test's CPU time is this process's (``time.process_time``: the test's code, and the
candidate's where it runs in process) plus, with the candidate apart, its process tree's, read
in /proc. A watcher thread reads both every :data:`POLL_S` while a test runs; a test over its
CPU limit gets :data:`SIGNAL`, whose handler (installed once, never removed, so that a late
signal finds it) fails the test with a timeout that says so. A hang that spins is so cut after
half a second of CPU, however loaded the machine; one that sleeps or waits is cut by its wall
limit (pytest-timeout's, set per test with its marker).

A timeout fires once, but a test can go on after it: each of its subtests catches the failure
and the next one calls the hung candidate again (the quickstart's ``test_many_round_trips``
held a hung candidate's run for the whole 45 s budget). So a test still running past a limit
gets the signal again every :data:`REFIRE_S`, over its CPU limit or past its wall limit by that
much: each further hang in it is cut as quickly. A signal that finds the test process in our
own reporting (the reporter's hooks, a message being written to the parent, the monitor's
bookkeeping) is let pass, and the next one comes :data:`REFIRE_S` later: a failure raised there
would lose a report or cut a message in half (a frame written to a full pipe, as a loaded
parent leaves it, goes in parts: a failure raised between two would leave the parent a broken
channel, read as tampering), not cut a hang. pytest-timeout's alarm found there is set again
for :data:`REFIRE_S` later. The same holds between a test's phases, while pytest writes the
report of one (setup, call, teardown) and before the next starts: a failure raised there is
pytest's internal error, which ends the session and leaves every later test not run. So neither
our signal nor pytest-timeout's alarm (its timer is set here, :meth:`TestClock.
set_wall_timer`, as its own but for this) fails anything between phases: seen under load, a
test failed at its CPU limit at 1.0 s and pytest-timeout's 1.0 s alarm found the report being
written, and a right program's six later tests read ``not_run``. A hang after that point is
still cut, by this clock's wall limit.

A wall limit is the test's time less the time its processes (every thread of this one, the
candidate's process) waited for a CPU: /proc's schedstat counts it. Every thread, not the
test's alone: the watcher below holds the GIL while it waits for a CPU, and the test's thread
meanwhile waits for the GIL, which its own count shows as a sleep (beside CI's load a right
program was cut at 1.47 s of wall for 0.32 s of CPU, under a 0.4 s limit). On a loaded
machine a right program's slow test, runnable all along, was cut at its wall limit in one
scoring and not in another, and two such timeouts end a run. A hang that sleeps or waits
never waits for a CPU, so it is cut exactly as before; one that spins is cut by its CPU
limit. The stretch is at most :data:`STRETCH` times the limit (a candidate that lowers its
own priority on a loaded machine waits longer), and the run's deadline bounds it all. Where
the kernel keeps no such count (gVisor), the limit is plain wall time.

A quick test (over before the watcher's first look) costs one ``process_time`` call at each
end and no read of /proc: only tests that take a while are measured in full.

The candidate's code runs here with the candidate in process, so it could ignore the signal or
stop the thread: it would only go on hanging until its wall limit or the run's deadline.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from pytest_scorewright.kernel.procfs import threads_waited_s, tree_cpu_s, waited_s
from pytest_scorewright.limits import SHORT_CPU_S, SHORT_SHARE, SHORT_WALL_S
from pytest_scorewright.protocol.wire import CPU_TIMEOUT_MARK, WALL_TIMEOUT_MARK

#: How often the watcher looks at a running test's CPU time.
POLL_S = 0.025
#: A test past a limit that it has already been failed for gets the signal again this often:
#: each subtest that calls a hung candidate again costs this (the quickstart's five: 0.5 s).
REFIRE_S = 0.1
#: Files of ours in which a signal is let pass (see the module docstring): the reporter, the
#: channel's writer, the re-check's writer (a frame cut half-written would read as a broken
#: channel: tampering) and the monitor (a finding counted but not yet sent would read as a
#: silenced monitor).
REPORTING_FILES = (
    str(Path(__file__).with_name("reporter.py")),
    str(Path(__file__).parents[2] / "protocol" / "channel.py"),
    str(Path(__file__).with_name("recheck.py")),
    str(Path(__file__).parents[1] / "shared" / "monitor.py"),
)
_REPORTING = frozenset(REPORTING_FILES)
#: How many of the innermost frames are looked at for them.
_REPORTING_DEPTH = 8
#: A wall limit is stretched by the time the test's processes waited for a CPU, up to this many
#: times itself (see the module docstring).
STRETCH = 10.0
#: Less than this much later (or this share of the limit) is not worth setting the alarm again.
MIN_STRETCH_S = 0.05
#: The signal that fails a test over its CPU limit (SIGALRM is pytest-timeout's).
SIGNAL = signal.SIGPROF
#: Bound at import, before any candidate code.
_process_time = time.process_time
_monotonic = time.monotonic

Limit = tuple[float, float | None]


class TestClock:
    """Per-test limits (``own``: node id -> (wall, CPU); ``default`` for the others, None for
    no CPU limit) and each test's CPU time. ``candidate_pid`` says the pid of the candidate's
    process now (None in process, or none running)."""

    __test__ = False  # not a pytest test class, despite the name

    def __init__(
        self,
        own: Mapping[str, Limit],
        default: Limit | None,
        candidate_pid: Callable[[], int | None],
    ) -> None:
        self.own = dict(own)
        self.default = default
        self.candidate_pid = candidate_pid
        #: Set by the reporter while the run has more timeouts than passes: quick tests get
        #: the short limits.
        self.short = False
        #: Set by the reporter once the run has had wire.HANG_EVIDENCE timeouts at all: then
        #: slower tests (limits of their own) get twice their reference time.
        self.hanging = False
        # Re-entrant: the signal's handler runs in the test's thread, perhaps while it holds it.
        self._lock = threading.RLock()
        self._nodeid: str | None = None
        self._cpu_limit: float | None = None
        self._started_own = 0.0
        #: The candidate's process at the watcher's first look, and its CPU seconds then.
        self._pid: int | None = None
        self._pid_cpu = 0.0
        self._pid_seen = 0.0
        self._elsewhere = 0.0  # CPU seconds of candidate processes the test outlived
        self._fired: str | None = None
        self._wall_limit: float | None = None
        self._started_wall = 0.0
        self._fired_at = 0.0  # when the signal was last sent for the running test
        # Seconds waited for a CPU (waited_s): this process's at the watcher's first look at
        # the test, and the candidate's process's as for its CPU time above.
        self._own_waited0 = 0.0
        self._pid_waited0 = 0.0
        self._pid_waited_seen = 0.0
        self._waited_elsewhere = 0.0
        self._alarm_set_at = 0.0  # when pytest-timeout's alarm was set for the running test
        self._alarm_due = 0.0  # and when it is due now
        self._why = ""  # what the last signal was for: its message
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        #: Whether a phase of a test (setup, call, teardown) is running in the test's thread:
        #: only then may a timeout be raised (see the module docstring).
        self.in_phase = False

    # -- in the test's thread ------------------------------------------------------------------

    def install(self) -> None:
        signal.signal(SIGNAL, self._on_signal)

    @contextlib.contextmanager
    def phase(self) -> Iterator[None]:
        """Around one phase of a test: timeouts may be raised inside it."""
        self.in_phase = True
        try:
            yield
        finally:
            self.in_phase = False

    def set_wall_timer(self, item: pytest.Item, settings: Any) -> bool | None:
        """pytest-timeout's ``pytest_timeout_set_timer``, as its own signal method sets it
        (``settings``: its Settings), but with an alarm that fails nothing between phases;
        None where it would not use a signal (it then sets its own timer)."""
        if settings.method != "signal" or threading.current_thread() is not threading.main_thread():
            return None
        import pytest_timeout  # type: ignore[import-untyped]  # loaded: it calls this hook

        def alarm(signum: int, frame: FrameType | None) -> None:
            if not self.in_phase:
                return
            if _in_reporting(frame):
                # Found writing a message (pytest-timeout's alarm comes once): again shortly.
                signal.setitimer(signal.ITIMER_REAL, REFIRE_S)
                return
            with self._lock:
                # What it waited for a CPU before the alarm was due: not the wait since (a
                # sleeping hang woken by the alarm waits for a CPU too, on a loaded machine).
                now = _monotonic()
                waited = self._credit_locked(settings.timeout) - (now - self._alarm_due)
                left = settings.timeout + max(0.0, waited) - (self._alarm_due - self._alarm_set_at)
                if left > max(MIN_STRETCH_S, settings.timeout * MIN_STRETCH_S):
                    # It waited for a CPU meanwhile: the limit is that much later.
                    self._alarm_due = now + left
                    signal.setitimer(signal.ITIMER_REAL, left)
                    return
            pytest_timeout.timeout_sigalrm(item, settings)

        def cancel() -> None:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, signal.SIG_DFL)

        item.cancel_timeout = cancel  # type: ignore[attr-defined]
        self._alarm_set_at = _monotonic()
        self._alarm_due = self._alarm_set_at + settings.timeout
        signal.signal(signal.SIGALRM, alarm)
        signal.setitimer(signal.ITIMER_REAL, settings.timeout)
        return True

    def limits_of(self, nodeid: str) -> Limit | None:
        """The (wall, CPU) limits ``nodeid`` runs under now, or None: the command line's."""
        limit = self.own.get(nodeid, self.default)
        own = nodeid in self.own
        # A candidate that hangs more than it works gets the short limits in its quick tests
        # (one timeout in the first test is enough: 0.2 s each after it, not a second). One
        # seen hanging twice gets twice the reference's time in a slower test, not five or
        # ten times: a hang there would cost seconds. A slower test never gets less than
        # twice its reference time (cut at the quick tests' short limits, a right answer
        # would read as a hang), nor less than its own limits after a single timeout: a
        # right program's one test stretched by a loaded machine must not cut the next.
        if limit is None or not ((self.short and not own) or (own and self.hanging)):
            return limit
        wall, cpu = limit
        least_wall = max(SHORT_WALL_S, wall * SHORT_SHARE["wall"]) if own else SHORT_WALL_S
        least_cpu = SHORT_CPU_S
        if own and cpu is not None:
            least_cpu = max(SHORT_CPU_S, cpu * SHORT_SHARE["cpu"])
        return min(wall, least_wall) if wall > 0 else least_wall, min(
            cpu if cpu is not None else least_cpu, least_cpu
        )

    def apply(self, item: pytest.Item) -> None:
        """Before ``item`` runs (before pytest-timeout reads its marker): its wall limit as a
        ``timeout`` marker where it differs from the command line's, and the clock started."""
        limit = self.limits_of(item.nodeid)
        if limit is not None and (item.nodeid in self.own or self.short):
            item.add_marker(pytest.mark.timeout(limit[0]), append=False)
        with self._lock:
            self._nodeid = item.nodeid
            self._cpu_limit = limit[1] if limit is not None else None
            self._wall_limit = limit[0] if limit is not None and limit[0] > 0 else None
            self._started_wall = _monotonic()
            self._fired_at = 0.0
            self._why = ""
            self._started_own = _process_time()
            self._pid, self._pid_cpu, self._pid_seen, self._elsewhere = None, 0.0, 0.0, 0.0
            self._pid_waited0 = self._pid_waited_seen = self._waited_elsewhere = 0.0
            self._fired = None
        if self._thread is None:
            watcher = threading.Thread(target=self._watch, name="scorewright-clock", daemon=True)
            self._thread = watcher
            watcher.start()
        self._wake.set()

    def spent(self) -> float | None:
        """The running test's CPU seconds so far; None for a quick one (not yet looked at)."""
        with self._lock:
            if self._nodeid is None:
                return None
            return self._spent_locked(final=True)

    def stop(self) -> None:
        with self._lock:
            self._nodeid = None

    # -- in the watcher's thread ---------------------------------------------------------------

    def _spent_locked(self, *, final: bool) -> float | None:
        own = _process_time() - self._started_own
        if self._pid is None:
            if final:
                return None if own < POLL_S else round(own, 4)
            self._pid = self.candidate_pid() or 0
            self._pid_cpu = self._pid_seen = (tree_cpu_s(self._pid) or 0.0) if self._pid else 0.0
            waited = (waited_s(self._pid) or 0.0) if self._pid else 0.0
            self._pid_waited0 = self._pid_waited_seen = waited
            self._own_waited0 = threads_waited_s(os.getpid()) or 0.0
            return own
        now = tree_cpu_s(self._pid) if self._pid else None
        if now is None:
            # The candidate's process ended (a crash, a timeout's restart) or none was running:
            # what it spent in this test stays counted, and a new one counts from its start.
            pid = self.candidate_pid() or 0
            if pid != self._pid:
                self._elsewhere += self._pid_seen - self._pid_cpu
                self._waited_elsewhere += self._pid_waited_seen - self._pid_waited0
                self._pid, self._pid_cpu, self._pid_seen = pid, 0.0, 0.0
                self._pid_waited0 = self._pid_waited_seen = 0.0
            now = (tree_cpu_s(pid) or 0.0) if pid else 0.0
        self._pid_seen = now
        return round(self._with_candidate(own), 4)

    def _with_candidate(self, own: float) -> float:
        """``own`` (this process's CPU in the test) plus what the candidate's processes
        spent in it, as of the watcher's last look (lock held)."""
        return own + self._elsewhere + max(0.0, self._pid_seen - self._pid_cpu)

    def _credit_locked(self, limit: float) -> float:
        """What a wall limit of ``limit`` seconds is stretched by now (lock held): the time the
        running test's processes (this one's threads, the candidate's process) waited
        for a CPU since the watcher's first look at it (a quick test is never looked at), at
        most :data:`STRETCH` - 1 times the limit."""
        if self._pid is None:
            return 0.0
        own = threads_waited_s(os.getpid())
        waited = (own - self._own_waited0) if own is not None else 0.0
        if self._pid:
            now = waited_s(self._pid)
            if now is not None:
                self._pid_waited_seen = now
        waited += self._waited_elsewhere + self._pid_waited_seen - self._pid_waited0
        # Threads and processes wait at the same time: never more than the time the test's
        # CPU did not cover (a spinning hang's test thread and the watcher both waited, and
        # it was stretched to the cap; apart, the watcher waited while the test's thread
        # slept on the candidate's answer).
        spent = self._with_candidate(_process_time() - self._started_own)
        idle = _monotonic() - self._started_wall - spent
        return min(max(0.0, waited), max(0.0, idle), (STRETCH - 1) * limit)

    def _watch(self) -> None:
        while True:
            self._wake.wait()
            time.sleep(POLL_S)
            with self._lock:
                if self._nodeid is None:
                    self._wake.clear()
                    continue
                why = self._over_limit()
                now = _monotonic()
                if why is None or (self._fired and now - self._fired_at < REFIRE_S):
                    continue
                self._fired, self._fired_at, self._why = self._nodeid, now, why
            signal.pthread_kill(threading.main_thread().ident or 0, SIGNAL)

    def _over_limit(self) -> str | None:
        """The timeout message the running test has earned, or None (lock held)."""
        spent = self._spent_locked(final=False)
        cpu = self._cpu_limit
        if cpu is not None and spent is not None and spent > cpu:
            return f"Timeout (>{cpu:g}s {CPU_TIMEOUT_MARK}"
        wall = self._wall_limit
        # pytest-timeout fails the test at its wall limit; still running REFIRE_S after it,
        # it went on (the failure was caught), and from then on every REFIRE_S.
        if wall is None:
            return None
        elapsed = _monotonic() - self._started_wall
        if elapsed > wall + REFIRE_S and elapsed - self._credit_locked(wall) > wall + REFIRE_S:
            return f"Timeout (>{wall:g}s {WALL_TIMEOUT_MARK}"
        return None

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        with self._lock:
            fired, current, why = self._fired, self._nodeid, self._why
        if fired is None or fired != current or not why:
            return  # late: the test it was meant for is over
        if not self.in_phase or _in_reporting(frame):
            return  # the watcher sends it again REFIRE_S later, if the test still runs
        pytest.fail(why, pytrace=False)


def _in_reporting(frame: FrameType | None) -> bool:
    for _ in range(_REPORTING_DEPTH):
        if frame is None:
            return False
        if frame.f_code.co_filename in _REPORTING:
            return True
        frame = frame.f_back
    return False
