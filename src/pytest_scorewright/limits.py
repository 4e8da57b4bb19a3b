"""Resource limits for one sandboxed pytest run."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

from pytest_scorewright.errors import ConfigError

#: Longest default per-test limit without a reference to calibrate it: real suites' slowest
#: tests (property-based, numeric) take a few seconds; a hang is cut here.
TEST_TIMEOUT_MAX_S = 10.0
#: Each test's own limits (Limits.calibrated): this many times what *that* test took with the
#: reference, its wall time and its CPU time (the test process's and the candidate's
#: process tree's), so that a loaded machine or an honestly slower program does not turn an
#: honest test into a timeout.
TEST_TIMEOUT_FACTOR = 10.0
#: ... its CPU time fewer: a loaded machine stretches wall time, hardly CPU time, so five
#: times is the same margin for an honestly slower program, and a spinning hang in a slow
#: test (the usual kind) is cut in half the time (a 0.44 s test: 3 s, was 5 s).
TEST_CPU_FACTOR = 5.0
#: ... at least this wall time: a hang in a sleep, a lock or a read costs about a second.
TEST_TIMEOUT_FLOOR_S = 1.0
#: ... and at least this CPU time: a hang that spins (the usual kind) is cut after half a
#: second of CPU, which a loaded machine does not stretch as it stretches wall time (a
#: lazy import of a heavy library in a test's first call stays well under it).
TEST_CPU_FLOOR_S = 0.5
#: While a run has more timeouts than passes (protocol/wire.py), each later quick test gets
#: at most these: a candidate that hangs more than it works is still scored on every test,
#: each in a fraction of a second (a quick test's reference time is milliseconds) ...
SHORT_WALL_S = 0.2
SHORT_CPU_S = 0.1
#: ... or, for a test with limits of its own (a slower one), at least twice what it took with
#: the reference: this share of its limits (each limit is at least its factor times the time).
SHORT_SHARE = {"wall": 2 / TEST_TIMEOUT_FACTOR, "cpu": 2 / TEST_CPU_FACTOR}
#: Limits are rounded up to one of these steps (times a power of ten): a task's limits come
#: out the same from one preparation to the next although the reference's times vary.
_STEPS = (1.0, 2.0, 3.0, 5.0, 10.0)
#: Least address space accepted. A run is forked with the interpreter already mapped, so a
#: trivial suite passes even at 1 MiB (measured), but any real work's first allocations fail
#: below a few tens of MiB: a value under this is a slip (5 for 5000), refused at setup.
MEMORY_MIN_MB = 64


def rounded_up(seconds: float) -> float:
    """``seconds`` rounded up to the next step of 1, 2, 3, 5 times a power of ten (0.5, 1, 2,
    3, 5, 10, 20...): the coarse steps make a limit measured on a busy machine and on a quiet
    one the same."""
    if seconds <= 0:
        return 0.0
    power = 10.0 ** math.floor(math.log10(seconds))
    step = next(step for step in _STEPS if seconds <= step * power * (1 + 1e-9))
    return round(step * power, 6)


@dataclass(frozen=True)
class TestLimits:
    """Each test's own limits, from what it took with the reference (Limits.calibrated).

    ``wall_s`` and ``cpu_s`` hold for every test not in ``own``; ``own`` lists the slower
    ones as ``(suite, node id, wall seconds, CPU seconds)``. A CPU limit of None means none.
    """

    __test__ = False  # not a pytest test class, despite the name

    wall_s: float
    cpu_s: float | None
    own: tuple[tuple[str, str, float, float | None], ...] = ()

    def for_suite(self, suite: str) -> dict[str, tuple[float, float | None]]:
        """Node id -> (wall, CPU) of the tests of ``suite`` that have limits of their own."""
        return {nodeid: (wall, cpu) for name, nodeid, wall, cpu in self.own if name == suite}

    def as_dict(self) -> dict[str, Any]:
        own: dict[str, dict[str, list[float | None]]] = {}
        for suite, nodeid, wall, cpu in self.own:
            own.setdefault(suite, {})[nodeid] = [wall, cpu]
        return {"wall_s": self.wall_s, "cpu_s": self.cpu_s, "own": own}


@dataclass(frozen=True)
class Limits:
    """Limits on one sandboxed run (the visible run and the held-out run each get them).

    Example::

        Limits(timeout_s=20, memory_mb=512)
    """

    #: Wall-clock budget for scoring one candidate (visible and held-out runs together, grace
    #: included; the two run at once when there is a warm parent), enforced by the parent,
    #: which kills the child's whole tree at its deadline.
    #: 45 s keeps a whole `scorewright score` call (collection and reference run included)
    #: under a minute.
    timeout_s: float = 45.0
    #: CPU seconds (RLIMIT_CPU); None means the wall deadline rounded up.
    cpu_s: int | None = None
    #: Address space in MiB (RLIMIT_AS).
    memory_mb: int = 2048
    #: Open file descriptors (RLIMIT_NOFILE).
    open_files: int = 256
    #: Largest file the child may write, in MiB (RLIMIT_FSIZE).
    file_size_mb: int = 64
    #: Processes and threads of the sandbox user (RLIMIT_NPROC; holds only after a uid drop).
    processes: int = 64
    #: Bytes of the child's stdout+stderr kept; the rest is read and dropped.
    output_bytes: int = 64 * 1024
    #: Time after a run's deadline for the parent to collect the killed child.
    grace_s: float = 1.0
    #: Wall-clock limit of one test (setup, call and teardown), through pytest-timeout, less
    #: the time its processes waited for a CPU (child/test_process/test_clock.py): the
    #: test records ``timeout`` and the run goes on (until two have: protocol/wire.py,
    #: MAX_TIMEOUTS). None means a quarter of ``timeout_s``, at most
    #: :data:`TEST_TIMEOUT_MAX_S`, which an Evaluator with a reference then narrows to ten
    #: times its slowest test (:meth:`calibrated`); 0 turns it off (the budget alone bounds a
    #: hang).
    test_timeout_s: float | None = None
    #: With the candidate in a process of its own: a run's processes (the tests, the
    #: candidate, what they start) share one CPU, when one is free of the evaluator's other
    #: runs (sandbox/placement.py). Each call is a round trip between two processes, and a
    #: wakeup on the same CPU costs a third of one across CPUs here (docs/performance.md);
    #: a candidate may still widen its own affinity. False lets the kernel spread them (a
    #: candidate that computes in parallel, a suite that starts worker processes).
    one_cpu: bool = True
    #: Set by calibration (:meth:`calibrated`), not by callers: each test's own limits.
    per_test: TestLimits | None = None

    def __post_init__(self) -> None:
        for name in ("timeout_s", "memory_mb", "open_files", "file_size_mb", "processes"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
                raise ConfigError(f"Limits.{name} must be a positive number, not {value!r}")
            if not math.isfinite(value):
                raise ConfigError(f"Limits.{name} must be finite, not {value!r}")
        if self.cpu_s is not None and (not isinstance(self.cpu_s, int) or self.cpu_s <= 0):
            raise ConfigError(f"Limits.cpu_s must be a positive integer, not {self.cpu_s!r}")
        if self.open_files < 32:
            raise ConfigError("Limits.open_files must be at least 32: pytest itself needs them")
        if self.memory_mb < MEMORY_MIN_MB:
            raise ConfigError(
                f"Limits.memory_mb {self.memory_mb} is less than a Python interpreter running "
                f"pytest needs; give at least {MEMORY_MIN_MB} (e.g. 512)"
            )
        if self.per_test is not None and not isinstance(self.per_test, TestLimits):
            raise ConfigError("Limits.per_test is set by calibration; leave it out")
        if not isinstance(self.one_cpu, bool):
            raise ConfigError(f"Limits.one_cpu must be True or False, not {self.one_cpu!r}")
        t = self.test_timeout_s
        if t is not None and (
            not isinstance(t, (int, float)) or isinstance(t, bool) or t < 0 or not math.isfinite(t)
        ):
            raise ConfigError(
                f"Limits.test_timeout_s must be a number of seconds (0 for none), not {t!r}"
            )
        if t is not None and t > self.timeout_s:
            raise ConfigError(
                f"Limits.test_timeout_s {t:g} is longer than the whole budget (timeout_s "
                f"{self.timeout_s:g}): one test could never reach it; give a shorter one"
            )

    @property
    def cpu_seconds(self) -> int:
        return self.cpu_s if self.cpu_s is not None else max(1, math.ceil(self.timeout_s))

    @property
    def test_seconds(self) -> float:
        """The per-test limit in force: 0 for none."""
        if self.test_timeout_s is not None:
            return float(self.test_timeout_s)
        return round(min(TEST_TIMEOUT_MAX_S, self.timeout_s / 4), 3)

    def calibrated(
        self, times: Mapping[tuple[str, str], tuple[float | None, float | None]]
    ) -> Limits:
        """These limits with each test's own, where the caller set no per-test limit:
        ``times`` maps (suite, node id) to the reference's wall and CPU seconds for that test
        (None where not measured). A test's limits are :data:`TEST_TIMEOUT_FACTOR` times its
        wall time and :data:`TEST_CPU_FACTOR` times its CPU time, at least the floors, rounded
        up (:func:`rounded_up`); no cap but the budget.
        ``test_timeout_s`` becomes the wall floor, the limit of every quick test."""
        if self.test_timeout_s is not None or not times:
            return self
        floor_wall, floor_cpu = TEST_TIMEOUT_FLOOR_S, TEST_CPU_FLOOR_S
        own = []
        for (suite, nodeid), (wall, cpu) in sorted(times.items()):
            mine_wall = rounded_up(max(floor_wall, TEST_TIMEOUT_FACTOR * (wall or 0.0)))
            mine_cpu = rounded_up(max(floor_cpu, TEST_CPU_FACTOR * (cpu or 0.0)))
            mine_wall = min(mine_wall, self.timeout_s)
            if (mine_wall, mine_cpu) != (floor_wall, floor_cpu):
                own.append((suite, nodeid, mine_wall, mine_cpu))
        return replace(
            self,
            test_timeout_s=floor_wall,
            per_test=TestLimits(floor_wall, floor_cpu, tuple(own)),
        )

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["cpu_s"] = self.cpu_seconds
        data["test_timeout_s"] = self.test_seconds
        data["per_test"] = self.per_test.as_dict() if self.per_test is not None else None
        return data
