"""The trusted parent's side of a sandboxed run: fork, deadline, kill, reap.

Process layout::

    parent (trusted; this module)
      └─ S  supervisor child: own session; enters new PID/mount(/network) namespaces
           └─ I  PID 1 of the new namespaces: private /proc, masks, loopback; reaps
                └─ W  worker: rlimits, Landlock, unprivileged uid; runs pytest

When namespaces are unavailable, S instead becomes a child subreaper and W is its child; S
kills whatever W left behind. Either way the parent owns the clock: at the deadline it kills
PID 1 (the kernel then kills the whole namespace), or W, and, when a uid was dropped, every
process of that uid. The parent reads two pipes, messages and output, each bounded.

A parent that exists only for this one run (the warm parent's job process, warm_server.py) enters
the namespaces itself and forks PID 1 directly, one process fewer::

    job (trusted; in the new mount/network namespaces, but in the outer PID namespace)
      └─ I  PID 1: private /proc, masks, loopback; reaps
           └─ W  worker

It then knows PID 1 without being told, and reaping PID 1 itself is its proof that nothing of
the run is left (the kernel reaps PID 1 only once its namespace is empty).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import selectors
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

from pytest_scorewright.child import linux
from pytest_scorewright.child.confine import WorkerPlan, confine_worker, reset_process
from pytest_scorewright.child.namespaces import Mask, setup_as_init, try_unshare
from pytest_scorewright.child.runner import Watch, run_pytest
from pytest_scorewright.sandbox.channel import FrameReader, send
from pytest_scorewright.warm.prepared import Prepared

_EXIT_SANDBOX_ERROR = 72
_EXIT_SUPERVISOR_ERROR = 71


@dataclass(frozen=True)
class SandboxSpec:
    worker: WorkerPlan
    pytest_args: tuple[str, ...]
    extra_path: tuple[str, ...]
    isolate_network: bool
    masks: tuple[Mask, ...] = ()
    stage_dir: str = ""
    use_namespaces: bool = True
    watch: Watch | None = None
    plugins: tuple[str, ...] = ()
    #: With namespaces: PID 1 bind-mounts ``bind_root`` (the run's work dir) on
    #: ``fixed_root``, the path every other path of the spec names (prepared.py).
    bind_root: str = ""
    fixed_root: str = ""
    #: The suite's initial conftest.py must be loaded before configuring (prepared.py).
    early_conftests: bool = False


@dataclass
class ChildOutcome:
    """What the parent observed of one sandboxed run. Messages are (arrival time, message)."""

    messages: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    wall_s: float = 0.0
    cpu_s: float | None = None
    max_rss_mb: float | None = None
    exit_code: int | None = None
    signal: int | None = None
    timed_out: bool = False
    channel_error: str | None = None
    output: str = ""
    output_dropped: int = 0
    isolation: dict[str, Any] = field(default_factory=dict)


def run_sandboxed(
    spec: SandboxSpec, prepared: Prepared | None = None, *, disposable: bool = False
) -> ChildOutcome:
    """Run pytest in a sandboxed child and observe it until it ends or the deadline;
    ``prepared`` is pytest's configuration for the spec's command line, parsed (and perhaps
    its session started) in the warm parent (prepared.py). ``disposable``: this process
    exists for this run only and may enter the namespaces itself (see the module docstring).
    """
    msg_r, msg_w = _pipe()
    out_r, out_w = _pipe()
    start = time.monotonic()
    if disposable and spec.use_namespaces and not try_unshare(isolate_network=spec.isolate_network):
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the child; its effects are tested
            _direct_init(spec, msg_w, out_w, prepared)
        for fd in (msg_w, out_w):
            os.close(fd)
        known = {"mode": "namespaces", "init_pid": pid}
        outcome = _Watch(spec, pid, start, msg_r, out_r, None, known).run()
    else:
        ctl_r, ctl_w = _pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the child; its effects are tested
            _supervisor_child(spec, msg_w, out_w, ctl_w, prepared)
        for fd in (msg_w, out_w, ctl_w):
            os.close(fd)
        outcome = _Watch(spec, pid, start, msg_r, out_r, ctl_r).run()
    outcome.isolation["pytest_config"] = prepared.kind if prepared is not None else "in the run"
    return outcome


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


class _Watch:
    """The parent's event loop over the child's pipes and exit."""

    def __init__(
        self,
        spec: SandboxSpec,
        pid: int,
        start: float,
        msg_r: int,
        out_r: int,
        ctl_r: int | None,
        known: dict[str, Any] | None = None,
    ) -> None:
        self.spec, self.pid, self.start = spec, pid, start
        self.limits = spec.worker.limits
        self.outcome = ChildOutcome()
        self.reader = FrameReader()
        self.control = FrameReader(max_frame=4096, max_total=16384)
        # ``known``: pid is PID 1 itself (no S). Every process of the run is in its
        # namespace, so no uid sweep is ever needed; and forking a sweep helper from here
        # would put it inside that namespace, as this process unshared it.
        self.direct = known is not None
        self.ctl: dict[str, Any] = dict(known or {})
        self.sweep_uid = None if self.direct else spec.worker.uid
        self.output = bytearray()
        self.reaped = False
        self.killed_at: float | None = None
        self.sel = selectors.DefaultSelector()
        for fd, kind in ((msg_r, "msg"), (out_r, "out"), (ctl_r, "ctl")):
            if fd is not None:
                self.sel.register(fd, selectors.EVENT_READ, kind)
        self.pidfd: int | None = None
        with contextlib.suppress(AttributeError, OSError):
            self.pidfd = os.pidfd_open(pid)
            self.sel.register(self.pidfd, selectors.EVENT_READ, "exit")

    def run(self) -> ChildOutcome:
        deadline = self.start + self.limits.timeout_s
        try:
            while self._open_pipes() or not self.reaped:
                now = time.monotonic()
                if self.killed_at is None and now >= deadline:
                    self.outcome.timed_out = True
                    self._kill_all()
                if self.killed_at is not None and now >= self.killed_at + self.limits.grace_s:
                    break  # something holds a pipe open after the kill: stop waiting
                limit = deadline if self.killed_at is None else self.killed_at + self.limits.grace_s
                wait = max(0.0, limit - now)
                if self.pidfd is None:
                    wait = min(wait, 0.02)
                for key, _ in self.sel.select(wait):
                    self._handle(key)
                if self.pidfd is None and not self.reaped:
                    self._try_reap(os.WNOHANG)
        finally:
            self._finish()
        return self.outcome

    def _open_pipes(self) -> bool:
        return any(key.data != "exit" for key in self.sel.get_map().values())

    def _handle(self, key: selectors.SelectorKey) -> None:
        fd = int(key.fd)
        if key.data == "exit":
            self.sel.unregister(fd)
            self._try_reap(os.WNOHANG)
            self._drain_control()
            # S is gone: nothing legitimate remains; whatever is left escaped.
            self._sweep()
            return
        try:
            data = os.read(fd, 65536)
        except OSError:
            data = b""
        if not data:
            self.sel.unregister(fd)
            os.close(fd)
            return
        if key.data == "msg":
            self._on_messages(data)
        elif key.data == "out":
            room = self.limits.output_bytes - len(self.output)
            self.output += data[: max(room, 0)]
            self.outcome.output_dropped += max(len(data) - max(room, 0), 0)
        else:
            for message in self.control.feed(data):
                self.ctl.update(message)

    def _drain_control(self) -> None:
        """Read what S said before it exited (its end of the pipe is closed now, unless a
        process it left behind holds it: then read only what is there)."""
        for key in list(self.sel.get_map().values()):
            if key.data != "ctl":
                continue
            fd = int(key.fd)
            os.set_blocking(fd, False)
            with contextlib.suppress(BlockingIOError):
                while data := os.read(fd, 4096):
                    for message in self.control.feed(data):
                        self.ctl.update(message)

    def _on_messages(self, data: bytes) -> None:
        arrived = time.monotonic() - self.start
        for message in self.reader.feed(data):
            self.outcome.messages.append((arrived, message))
        if self.reader.broken is not None and self.outcome.channel_error is None:
            self.outcome.channel_error = self.reader.broken
            self._kill_all()

    def _try_reap(self, flags: int) -> None:
        if self.reaped:
            return
        try:
            pid, status, usage = os.wait4(self.pid, flags)
        except ChildProcessError:
            self.reaped = True
            return
        if pid == 0:
            return
        self.reaped = True
        if self.direct:  # PID 1 is reaped only once its namespace is empty
            self.ctl["namespace_empty"] = True
        self.outcome.cpu_s = round(usage.ru_utime + usage.ru_stime, 6)
        self.outcome.max_rss_mb = round(usage.ru_maxrss / 1024, 3)
        code = os.waitstatus_to_exitcode(status)
        if code < 0:
            self.outcome.signal = -code
        elif code >= 128:
            self.outcome.signal = code - 128  # the worker's signal, passed up as 128 + N
        else:
            self.outcome.exit_code = code

    def _kill_all(self) -> None:
        if self.killed_at is None:
            self.killed_at = time.monotonic()
        init_pid, worker_pid = self.ctl.get("init_pid"), self.ctl.get("worker_pid")
        if not self.reaped:
            for target in (init_pid, worker_pid):
                if isinstance(target, int) and target > 1:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(target, signal.SIGKILL)
            if not self.ctl:  # S died or hung before it said anything: its session goes
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.pid, signal.SIGKILL)
        self._sweep()

    def _left_nothing(self) -> bool:
        # S said PID 1 was reaped: the kernel guarantees the namespace is empty, and the
        # uid is used nowhere else. This saves a helper fork and a /proc scan (~4 ms) a run.
        return bool(self.ctl.get("namespace_empty")) and self.reaped

    def _sweep(self) -> None:
        uid = self.sweep_uid
        if uid is not None and not self._left_nothing():
            kill_every_process_of(uid)

    def _finish(self) -> None:
        if not self.reaped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            self._try_reap(0)
        uid = self.sweep_uid
        if uid is not None and not self._left_nothing():
            # kill -1 can miss a process that is being forked at that instant: check, repeat.
            for _ in range(50):
                kill_every_process_of(uid)
                if not processes_of(uid):
                    break
                time.sleep(0.002)
        for key in list(self.sel.get_map().values()):
            fd = int(key.fd)
            self.sel.unregister(fd)
            with contextlib.suppress(OSError):
                os.close(fd)
        self.sel.close()
        self.outcome.wall_s = round(time.monotonic() - self.start, 6)
        self.outcome.output = self.output.decode("utf-8", errors="replace")
        self.outcome.isolation = {key: self.ctl[key] for key in ("mode", "why") if key in self.ctl}
        if self.outcome.channel_error is None and self.reader.pending:
            self.outcome.channel_error = "the child's last message was cut off"


def kill_every_process_of(uid: int) -> None:
    """SIGKILL every process running as ``uid``: a helper takes that uid and kills all it may
    signal (kill -1), which finds descendants however they detached from the tree."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the helper
        try:
            os.setgid(uid)
            os.setuid(uid)
            os.kill(-1, signal.SIGKILL)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def processes_of(uid: int) -> list[int]:
    """Processes whose real uid is ``uid`` (from /proc/<pid>/status, which is right even for
    non-dumpable processes, whose /proc directory belongs to root)."""
    wanted = str(uid).encode()

    def real_uid(status: bytes) -> bytes:
        line = next((ln for ln in status.splitlines() if ln.startswith(b"Uid:")), b"Uid: -")
        return line.split()[1]

    return _scan_proc("status", real_uid, wanted)


def _scan_proc(name: str, field: Callable[[bytes], bytes], wanted: bytes) -> list[int]:
    """Pids whose /proc/<pid>/<name> yields ``wanted`` through ``field``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/{name}", "rb") as fh:
                value = field(fh.read())
        except (OSError, IndexError):
            continue
        if value == wanted:
            found.append(int(entry))
    return found


# -- the child side ------------------------------------------------------------------------


def _detach(out_w: int, keep: Sequence[int], prepared: Prepared | None) -> None:
    """The first steps of the parent's child: output to the output pipe, a clean process
    (only ``keep`` open), a session of its own (no terminal's signals reach the run)."""
    os.dup2(out_w, 1)
    os.dup2(out_w, 2)
    # A started session's descriptors (on /dev/null) stay where its objects expect them.
    reset_process(keep_fds=(*keep, *(prepared.fds if prepared else ())))
    os.setsid()


def _direct_init(spec: SandboxSpec, msg_w: int, out_w: int, prepared: Prepared | None) -> NoReturn:
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


def _supervisor_child(
    spec: SandboxSpec, msg_w: int, out_w: int, ctl_w: int, prepared: Prepared | None
) -> NoReturn:
    try:
        _die_with_parent(msg_w)
        _detach(out_w, (msg_w, ctl_w), prepared)
        why = (
            try_unshare(isolate_network=spec.isolate_network)
            if spec.use_namespaces
            else "namespaces not used (unavailable here, or namespaces=False)"
        )
        if why is None:
            init = os.fork()
            if init == 0:
                os.close(ctl_w)
                _die_with_parent(msg_w)  # S's death, like the parent's, ends the namespace
                _init_process(spec, msg_w, prepared)
            send(ctl_w, {"type": "ctl", "mode": "namespaces", "init_pid": init})
            os.close(msg_w)
            _, status = os.waitpid(init, 0)
            # PID 1 is reaped only after the kernel has killed and reaped every other
            # process of its namespace (zap_pid_ns_processes): nothing of the run is left.
            send(ctl_w, {"type": "ctl", "namespace_empty": True})
            os._exit(_passed_up(status))
        linux.prctl(linux.PR_SET_CHILD_SUBREAPER, 1)
        worker = os.fork()
        if worker == 0:
            os.close(ctl_w)
            _die_with_parent(msg_w)  # best effort here: the candidate could clear it
            _worker_process(spec, msg_w, None)  # no mount namespace: no fixed path
        send(ctl_w, {"type": "ctl", "mode": "subreaper", "worker_pid": worker, "why": why})
        os.close(ctl_w)
        os.close(msg_w)
        status = _reap_until(worker)
        _kill_orphans()
        os._exit(_passed_up(status))
    except BaseException:
        os._exit(_EXIT_SUPERVISOR_ERROR)


def _init_process(spec: SandboxSpec, msg_w: int, prepared: Prepared | None) -> NoReturn:
    try:
        bind = (spec.bind_root, spec.fixed_root) if spec.fixed_root else None
        setup_as_init(spec.masks, spec.stage_dir, loopback=spec.isolate_network, bind=bind)
        worker = os.fork()
        if worker == 0:
            _worker_process(spec, msg_w, prepared)
        os.close(msg_w)
        # PID 1 reaps everything; it leaves when the worker is done, and the kernel then
        # kills whatever else is left in the namespace.
        os._exit(_passed_up(_reap_until(worker)))
    except BaseException as exc:
        with contextlib.suppress(BaseException):
            send(msg_w, {"type": "sandbox_error", "reason": f"namespace setup: {exc}"})
        os._exit(_EXIT_SANDBOX_ERROR)


def _worker_process(spec: SandboxSpec, msg_w: int, prepared: Prepared | None) -> NoReturn:
    try:
        applied = confine_worker(spec.worker)
        send(msg_w, {"type": "sandbox", **applied})
    except BaseException as exc:
        with contextlib.suppress(BaseException):
            send(msg_w, {"type": "sandbox_error", "reason": f"confinement: {exc}"})
        os._exit(_EXIT_SANDBOX_ERROR)
    run_pytest(
        msg_w,
        spec.pytest_args,
        spec.extra_path,
        spec.watch,
        spec.plugins,
        prepared,
        early_conftests=spec.early_conftests,
    )


def _reap_until(worker: int) -> int:
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            return 0
        except InterruptedError:
            continue
        if pid == worker:
            return status


def _passed_up(status: int) -> int:
    code = os.waitstatus_to_exitcode(status)
    return 128 + (-code) if code < 0 else code


def _kill_orphans() -> None:
    """As a subreaper: kill and reap every process reparented to us, until none is left."""
    me = str(os.getpid())
    for _ in range(100):
        orphans = _children_of(me)
        if not orphans:
            return
        for pid in orphans:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        time.sleep(0.005)


def _children_of(ppid: str) -> Sequence[int]:
    # /proc/<pid>/stat: the parent pid is the second field after the ")" ending the name.
    return _scan_proc("stat", lambda stat: stat.rsplit(b")", 1)[1].split()[1], ppid.encode())
