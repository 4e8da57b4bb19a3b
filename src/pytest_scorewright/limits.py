"""Resource limits for one sandboxed pytest run."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Any

from pytest_scorewright.errors import ConfigError

#: Longest default per-test limit: real suites' slowest tests (property-based, numeric) take
#: a few seconds; a hang is cut here.
TEST_TIMEOUT_MAX_S = 10.0
#: The per-test limit a reference calibrates (Limits.calibrated): this many times its slowest
#: test, at least TEST_TIMEOUT_FLOOR_S, so that a loaded machine does not turn an honest slow
#: test into a timeout, and a hang costs about a second a test, not ten.
TEST_TIMEOUT_FACTOR = 10.0
TEST_TIMEOUT_FLOOR_S = 1.0
#: Least address space accepted. A run is forked with the interpreter already mapped, so a
#: trivial suite passes even at 1 MiB (measured), but any real work's first allocations fail
#: below a few tens of MiB: a value under this is a slip (5 for 5000), refused at setup.
MEMORY_MIN_MB = 64


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
    #: Wall-clock limit of one test (setup, call and teardown), through pytest-timeout: the
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

    def calibrated(self, slowest_test_s: float | None) -> Limits:
        """These limits with the per-test limit set from the reference's slowest test (its
        parent-measured time), where the caller set none: :data:`TEST_TIMEOUT_FACTOR` times
        it, at least :data:`TEST_TIMEOUT_FLOOR_S`, never more than the default."""
        if self.test_timeout_s is not None or slowest_test_s is None:
            return self
        seconds = max(TEST_TIMEOUT_FLOOR_S, TEST_TIMEOUT_FACTOR * slowest_test_s)
        return replace(self, test_timeout_s=round(min(seconds, self.test_seconds), 3))

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["cpu_s"] = self.cpu_seconds
        data["test_timeout_s"] = self.test_seconds
        return data
