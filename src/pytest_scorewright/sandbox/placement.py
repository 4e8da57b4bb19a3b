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

import math
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


def available_cores() -> tuple[int, str]:
    """How many candidates at once this process's CPUs can keep busy, and how that was
    decided: the CPUs it may run on (affinity, a container's cpuset), fewer where a cgroup
    CPU quota (v2 ``cpu.max``, v1 ``cpu.cfs_quota_us``, on the way to the root) allows less
    time than that, rounded up."""
    cpus = len(allowed_cpus()) or os.cpu_count() or 1
    quota = _cgroup_quota()
    if quota is not None and math.ceil(quota) < cpus:
        return max(1, math.ceil(quota)), f"the cgroup CPU quota of {quota:g} CPUs"
    return cpus, f"the {cpus} CPU{'s' if cpus > 1 else ''} this process may run on"


def _cgroup_quota(root: str = "/sys/fs/cgroup", proc: str = "/proc/self/cgroup") -> float | None:
    """The tightest CPU quota on this process's cgroup and its ancestors, in CPUs."""
    try:
        with open(proc, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    found: list[float] = []
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":  # v2: cpu.max is "max PERIOD" or "QUOTA PERIOD"
            found += _quotas(os.path.join(root, path.lstrip("/")), root, "cpu.max")
        elif "cpu" in controllers.split(","):  # v1
            base = os.path.join(root, controllers)
            found += _quotas(os.path.join(base, path.lstrip("/")), base, "cpu.cfs_quota_us")
    return min(found) if found else None


def _quotas(directory: str, top: str, name: str) -> list[float]:
    found = []
    while True:
        try:
            with open(os.path.join(directory, name), encoding="utf-8") as fh:
                fields = fh.read().split()
            if name == "cpu.max":
                quota, period = fields[0], fields[1]
            else:
                with open(os.path.join(directory, "cpu.cfs_period_us"), encoding="utf-8") as fh:
                    quota, period = fields[0], fh.read().strip()
            if quota not in ("max", "-1") and float(period) > 0:
                found.append(float(quota) / float(period))
        except (OSError, IndexError, ValueError):
            pass
        if os.path.normpath(directory) == os.path.normpath(top) or len(directory) <= len(top):
            return found
        directory = os.path.dirname(directory)
