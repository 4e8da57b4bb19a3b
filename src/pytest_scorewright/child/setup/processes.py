"""The processes of a run below the trusted parent: S, PID 1 and the worker W.

They run the setup that happens before any candidate code (detach, namespaces, confinement)
and then, in W, pytest. Everything here runs in a child process; the parent's side is
sandbox/launch.py (the fork) and sandbox/deadline.py (the clock).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
from collections.abc import Sequence
from typing import TYPE_CHECKING, NoReturn

from pytest_scorewright.child.setup.confine import confine_worker, reset_process
from pytest_scorewright.child.setup.spawner import run_worker
from pytest_scorewright.child.test_process.runner import run_pytest
from pytest_scorewright.kernel import linux
from pytest_scorewright.kernel.namespaces import (
    apart_in_gvisor,
    give_back,
    hand_over,
    setup_as_init,
    try_unshare,
)
from pytest_scorewright.kernel.reaper import end_descendants, end_uid
from pytest_scorewright.protocol import wire
from pytest_scorewright.protocol.channel import send
from pytest_scorewright.protocol.wire import SandboxSpec

if TYPE_CHECKING:
    from pytest_scorewright.child.test_process.resume import Prepared

_EXIT_SANDBOX_ERROR = 72
_EXIT_SUPERVISOR_ERROR = 71


def _detach(out_w: int, keep: Sequence[int], prepared: Prepared | None) -> None:
    """The first steps of the parent's child: output to the output pipe, a clean process
    (only ``keep`` open), a session of its own (no terminal's signals reach the run)."""
    os.dup2(out_w, 1)
    os.dup2(out_w, 2)
    # A started session's descriptors (on /dev/null) stay where its objects expect them.
    reset_process(keep_fds=(*keep, *(prepared.fds if prepared else ())))
    os.setsid()


def direct_init(spec: SandboxSpec, msg_w: int, out_w: int, prepared: Prepared | None) -> NoReturn:
    try:
        _die_with_parent(msg_w)
        _detach(out_w, (msg_w,), prepared)
    except BaseException:
        os._exit(_EXIT_SUPERVISOR_ERROR)
    _init_process(spec, msg_w, prepared)


def _die_with_parent(msg_w: int) -> None:
    """SIGKILL this process when the trusted parent dies (say, its caller was killed and
    the warm parent killed its jobs): for PID 1 that ends the whole namespace, so no run
    outlives its watcher. Then make sure the parent did not die before that was set: its
    read end of the message pipe is the only one, so a write end with no reader means it
    is gone (getppid() cannot tell, as it is 0 across a PID namespace)."""
    linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)
    poller = select.poll()
    poller.register(msg_w, select.POLLOUT)
    if any(events & select.POLLERR for _, events in poller.poll(0)):
        os._exit(_EXIT_SUPERVISOR_ERROR)


def supervisor_child(
    spec: SandboxSpec,
    msg_w: int,
    out_w: int,
    ctl_w: int,
    prepared: Prepared | None,
    shared: int | None = None,
    cgroup: str | None = None,
) -> NoReturn:
    """S: ``shared``, the file of the user namespace mapped with the caller's subordinate
    ids (sandbox/subids.py), where the run joins one; ``cgroup``, the run's own cgroup
    (sandbox/cgroups.py), which S enters before it forks W where there are no namespaces."""
    try:
        _die_with_parent(msg_w)
        _detach(out_w, (msg_w, ctl_w, *(() if shared is None else (shared,))), prepared)
        why = (
            try_unshare(
                isolate_network=spec.isolate_network, user=spec.user_namespace, shared=shared
            )
            if spec.use_namespaces
            else spec.why_no_namespaces or "namespaces not used"
        )
        if shared is not None:
            os.close(shared)
        if why is None:
            hand_over(spec.hand_over, spec.worker.uid or 0)
            init = os.fork()
            if init == 0:
                os.close(ctl_w)
                _die_with_parent(msg_w)  # S's death, like the parent's, ends the namespace
                _init_process(spec, msg_w, prepared)
            send(ctl_w, {"type": wire.CTL, **namespaces_record(spec), "init_pid": init})
            os.close(msg_w)
            _, status = os.waitpid(init, 0)
            # PID 1 is reaped only after the kernel has killed and reaped every other
            # process of its namespace (zap_pid_ns_processes): nothing of the run is left.
            send(ctl_w, {"type": wire.CTL, "namespace_empty": True})
            give_back(spec.hand_over)
            os._exit(_passed_up(status))
        if spec.gvisor:
            # No subreaper here (gVisor allows only its first process): the run's uid, its
            # own, is swept at its end (sandbox/deadline.py), which finds every orphan.
            apart_in_gvisor(spec.isolate_network)
        else:
            linux.prctl(linux.PR_SET_CHILD_SUBREAPER, 1)
        in_cgroup = cgroup is not None and _enter_cgroup(cgroup)

        def start(spawner: int | None) -> NoReturn:
            os.close(ctl_w)
            _die_with_parent(msg_w)  # best effort here: the candidate could clear it
            _worker_process(spec, msg_w, None, spawner)  # no mount namespace: no fixed path

        def forked(worker: int) -> None:
            send(
                ctl_w,
                {
                    "type": wire.CTL,
                    "mode": "gvisor" if spec.gvisor else "subreaper",
                    "worker_pid": worker,
                    "why": why,
                    "in_cgroup": in_cgroup,
                },
            )
            os.close(msg_w)

        status = run_worker(spec, start, forked)
        if spec.gvisor and spec.worker.uid is not None:
            # Orphans are not ours there (no subreaper): what the run left is found by its
            # uid, now, rather than when its deadline comes (a daemon holding the output pipe).
            end_uid(spec.worker.uid)
        left = end_descendants()
        send(ctl_w, {"type": wire.CTL, "left_by_supervisor": left})
        os._exit(_passed_up(status))
    except BaseException:
        os._exit(_EXIT_SUPERVISOR_ERROR)


def _enter_cgroup(path: str) -> bool:
    """Move S into the run's cgroup (every process it starts is then in it); False where the
    kernel refused."""
    try:
        with open(os.path.join(path, "cgroup.procs"), "w") as fh:
            fh.write("0")
    except OSError:
        return False
    return True


def namespaces_record(spec: SandboxSpec) -> dict[str, object]:
    """What the control record says of a run in namespaces."""
    return {
        "mode": "namespaces",
        "user_namespace": spec.user_namespace,
        "subordinate_ids": spec.shared_user_namespace,
    }


def _init_process(spec: SandboxSpec, msg_w: int, prepared: Prepared | None) -> NoReturn:
    try:
        bind = (spec.bind_root, spec.fixed_root) if spec.fixed_root else None
        work = (spec.work_root, spec.work_writable) if spec.work_root else None
        setup_as_init(spec.masks, loopback=spec.isolate_network, bind=bind, work=work)

        def start(spawner: int | None) -> NoReturn:
            _worker_process(spec, msg_w, prepared, spawner)

        # PID 1 reaps everything; it leaves when the worker is done, and the kernel then
        # kills whatever else is left in the namespace.
        status = run_worker(spec, start, lambda _: os.close(msg_w))
        os._exit(_passed_up(status))
    except BaseException as exc:
        with contextlib.suppress(BaseException):
            send(msg_w, {"type": wire.SANDBOX_ERROR, "reason": f"namespace setup: {exc}"})
        os._exit(_EXIT_SANDBOX_ERROR)


def _worker_process(
    spec: SandboxSpec, msg_w: int, prepared: Prepared | None, spawner: int | None = None
) -> NoReturn:
    try:
        if spawner is not None:
            # The candidate's process shares this uid: without this it could ptrace this
            # process or read its memory and descriptors through /proc.
            linux.prctl(linux.PR_SET_DUMPABLE, 0)
        applied = confine_worker(spec.worker)
        send(msg_w, {"type": wire.SANDBOX, **applied})
    except BaseException as exc:
        with contextlib.suppress(BaseException):
            send(msg_w, {"type": wire.SANDBOX_ERROR, "reason": f"confinement: {exc}"})
        os._exit(_EXIT_SANDBOX_ERROR)
    run_pytest(
        msg_w,
        spec.pytest_args,
        spec.extra_path,
        spec.watch,
        spec.plugins,
        prepared,
        early_conftests=spec.early_conftests,
        proxy=(spawner, spec.proxied, spec.candidate_path) if spawner is not None else None,
        candidate_modules=spec.candidate_modules,
        coverage=spec.coverage,
        round_key=spec.round_key,
        benchmarks=spec.benchmarks,
        test_limits=(spec.test_limits, spec.test_limit),
    )


def _passed_up(status: int) -> int:
    code = os.waitstatus_to_exitcode(status)
    return 128 + (-code) if code < 0 else code
