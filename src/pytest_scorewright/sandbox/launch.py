"""Starting a sandboxed run: the pipes, the fork, and the layout of processes.

Process layout::

    parent (trusted; this module and deadline.py)
      └─ S  supervisor child: own session; enters new PID/mount(/network) namespaces
           └─ I  PID 1 of the new namespaces: private /proc, masks, loopback; reaps
                └─ W  worker: rlimits, Landlock, unprivileged uid; runs pytest

When namespaces are unavailable, S instead becomes a child subreaper and W is its child; S
kills whatever W left behind. The code of S, I and W is in child/setup/processes.py; the parent's
clock, deadline and kill are in deadline.py.

A parent that exists only for this one run (the warm parent's job process, warm/server.py)
enters the namespaces itself and forks PID 1 directly, one process fewer::

    job (trusted; in the new mount/network namespaces, but in the outer PID namespace)
      └─ I  PID 1: private /proc, masks, loopback; reaps
           └─ W  worker

It then knows PID 1 without being told, and reaping PID 1 itself is its proof that nothing of
the run is left (the kernel reaps PID 1 only once its namespace is empty).
"""

from __future__ import annotations

import dataclasses
import fcntl
import os
import signal
import time
from typing import TYPE_CHECKING

from pytest_scorewright.child.setup.processes import (
    direct_init,
    namespaces_record,
    supervisor_child,
)
from pytest_scorewright.kernel import linux
from pytest_scorewright.kernel.namespaces import give_back, hand_over, try_unshare
from pytest_scorewright.protocol.wire import NPROC_USER, ChildOutcome, SandboxSpec
from pytest_scorewright.sandbox import cgroups, subids
from pytest_scorewright.sandbox.deadline import RunWatch
from pytest_scorewright.sandbox.sweep import tasks_of

if TYPE_CHECKING:
    from pytest_scorewright.child.test_process.resume import Prepared


def run_sandboxed(
    spec: SandboxSpec,
    prepared: Prepared | None = None,
    *,
    disposable: bool = False,
    stop_r: int | None = None,
) -> ChildOutcome:
    """Run pytest in a sandboxed child and observe it until it ends or the deadline;
    ``prepared`` is pytest's configuration for the spec's command line, parsed (and perhaps
    its session started) in the warm parent (prepared.py). ``disposable``: this process
    exists for this run only and may enter the namespaces itself (see the module docstring).
    ``stop_r``: a pipe whose other end closing ends the run at once (deadline.py).
    """
    spec = _with_process_count(spec)
    if disposable:
        signal.signal(signal.SIGTERM, _terminated)
        # If the warm parent dies (killed, crashed), this run ends as when its caller goes.
        linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGTERM)
    # The user namespace mapped with the caller's subordinate ids (subids.py), made once by
    # this process (the warm parent made it before forking this job).
    shared = _shared_namespace() if spec.shared_user_namespace else None
    msg_r, msg_w = _pipe()
    out_r, out_w = _pipe()
    start = time.monotonic()
    if (
        disposable
        and spec.use_namespaces
        and not try_unshare(
            isolate_network=spec.isolate_network, user=spec.user_namespace, shared=shared
        )
    ):
        hand_over(spec.hand_over, spec.worker.uid or 0)
        try:
            pid = os.fork()
            if pid == 0:  # pragma: no cover - runs in the child; its effects are tested
                direct_init(spec, msg_w, out_w, prepared)
            for fd in (msg_w, out_w):
                os.close(fd)
            known = {**namespaces_record(spec), "init_pid": pid}
            outcome = RunWatch(spec, pid, start, msg_r, out_r, None, known, stop_r).run()
        finally:
            give_back(spec.hand_over)  # PID 1 is reaped: nothing of the run writes now
    else:
        # Orphans of S come here if S itself dies (say, a candidate kills it where no
        # Landlock signal scope stops that): this process ends them before it answers. Not
        # inside gVisor, which lets only its first process be a subreaper (warm/gvisor_init.py
        # reaps them there; the run's own uid is swept).
        subreaper = disposable and not spec.gvisor
        if subreaper:
            linux.prctl(linux.PR_SET_CHILD_SUBREAPER, 1)
        ctl_r, ctl_w = _pipe()
        cgroup = _run_cgroup(spec) if spec.cgroup else None  # planned only without namespaces
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the child; its effects are tested
            supervisor_child(spec, msg_w, out_w, ctl_w, prepared, shared, cgroup)
        for fd in (msg_w, out_w, ctl_w):
            os.close(fd)
        outcome = RunWatch(
            spec, pid, start, msg_r, out_r, ctl_r, None, stop_r, subreaper=subreaper
        ).run()
        if cgroup is not None:
            _end_cgroup(cgroup, outcome)
    outcome.isolation["pytest_config"] = prepared.kind if prepared is not None else "in the run"
    return outcome


def _run_cgroup(spec: SandboxSpec) -> str | None:
    """A cgroup of the run's own (cgroups.py), or None where none can be made now."""
    try:
        return cgroups.home().new_run(spec.worker.limits.processes + 2)  # S and W count too
    except (cgroups.Unavailable, OSError):
        return None


def _end_cgroup(path: str, outcome: ChildOutcome) -> None:
    """Kill what is left in the run's cgroup, remove it, and record whether S was in it."""
    left = cgroups.end(path)
    if outcome.isolation.get("in_cgroup"):
        outcome.isolation["cgroup"] = path
        outcome.isolation["cgroup_pids"] = cgroups.home().pids
    if left:
        outcome.isolation["left"] = max(left, int(outcome.isolation.get("left") or 0))


def _shared_namespace() -> int:
    """The file of the user namespace mapped with the caller's subordinate ids: the one this
    process inherited (a job of the warm parent, which made it before forking), or made."""
    inherited = subids.current()
    return inherited.fd if inherited is not None else subids.keeper().fd


def _with_process_count(spec: SandboxSpec) -> SandboxSpec:
    """Where RLIMIT_NPROC counts every process of the caller's uid, the worker's limit is what
    that uid has now, plus S or PID 1 and the worker, plus ``limits.processes``: counted
    here, before the fork, where /proc shows the host's processes and not a PID namespace's.
    """
    worker = spec.worker
    if worker.nproc_scope != NPROC_USER:
        return spec
    slack = worker.nproc_slack + tasks_of(os.getuid()) + 2
    candidate = spec.candidate
    if candidate is not None:  # the candidate's process shares the uid, and so the count
        candidate = dataclasses.replace(candidate, nproc_slack=slack)
    return dataclasses.replace(
        spec, worker=dataclasses.replace(worker, nproc_slack=slack), candidate=candidate
    )


class Terminated(BaseException):
    """The warm parent asked this job to end (its caller is gone): the watch's cleanup runs
    (RunWatch.run's ``finally``), then the job exits."""


def _terminated(signum: int, frame: object) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # once: the cleanup must not be cut short
    raise Terminated


def _pipe() -> tuple[int, int]:
    """A pipe whose ends are above 0-2: the child dup2()s its output onto 1 and 2, which must
    never be one of these (a caller that closed its stdio would get 0 and 1 from os.pipe)."""
    ends = []
    for fd in os.pipe():
        if fd < 3:
            moved = fcntl.fcntl(fd, fcntl.F_DUPFD, 3)
            os.close(fd)
            fd = moved
        ends.append(fd)
    return ends[0], ends[1]
