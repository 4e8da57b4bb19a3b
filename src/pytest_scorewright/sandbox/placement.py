"""Which CPU a run with the candidate apart is placed on.

With isolation by process every call of a test is a round trip: the test process writes,
the candidate's process wakes, answers, and the test process wakes again. Woken on another
CPU, each of those wakeups costs an inter-processor interrupt, which in a virtual machine is
the larger part of the round trip (measured here: a null call 140-180 µs across CPUs, 33-55
µs on one; benchmarks/isolation_cost.py). The two processes never compute at the same time,
so one CPU loses them nothing. A run is placed only on a CPU no other run of this warm
parent holds: runs beyond the CPUs are left to the kernel, which can still balance them (pinned
runs it cannot move; measured, placing every run on the least busy CPU made a batch slower).
"""

from __future__ import annotations

import os
from collections.abc import Sequence


def allowed_cpus() -> list[int]:
    """The CPUs this process may run on (a container's or a cgroup's set, not the host's)."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux: no placement
        return []


def free_cpu(in_use: Sequence[int | None], cpus: Sequence[int] | None = None) -> int | None:
    """An allowed CPU that none of ``in_use`` (the CPUs of the runs in flight) is on, or
    None if there is none. The search starts from a CPU that depends on this process, so
    that warm parents side by side (an executor's workers) begin on different CPUs."""
    choices = list(cpus) if cpus is not None else allowed_cpus()
    if not choices:
        return None
    start = os.getpid() % len(choices)
    choices = choices[start:] + choices[:start]
    counts = {cpu: 0 for cpu in choices}
    for cpu in in_use:
        if cpu in counts:
            counts[cpu] += 1
    return next((cpu for cpu in choices if counts[cpu] == 0), None)
