"""The trusted parent's watch over one run: its clock, its deadline, the kill and the reap.

The parent owns the clock: at the deadline it kills PID 1 (the kernel then kills the whole
namespace), or the worker W, and, when a uid was dropped, every process of that uid. It reads
two pipes, messages and output, each bounded, and stamps each message with its own clock as it
arrives.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import time
from typing import Any

from pytest_scorewright.kernel.reaper import end_descendants
from pytest_scorewright.protocol.channel import FrameReader
from pytest_scorewright.protocol.wire import ChildOutcome, SandboxSpec
from pytest_scorewright.sandbox import subids
from pytest_scorewright.sandbox.sweep import kill_every_process_of, processes_of

#: What the control record of a run passes on to its outcome.
_RECORDED = (
    "mode",
    "why",
    "user_namespace",
    "subordinate_ids",
    "left",
    "left_by_supervisor",
    "in_cgroup",
)


class RunWatch:
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
        stop_r: int | None = None,
        *,
        subreaper: bool = False,
    ) -> None:
        self.spec, self.pid, self.start = spec, pid, start
        self.limits = spec.worker.limits
        self.outcome = ChildOutcome()
        self.reader = FrameReader(max_messages=spec.max_messages)
        self.control = FrameReader(max_frame=4096, max_total=16384)
        # ``known``: pid is PID 1 itself (no S). Every process of the run is in its
        # namespace, so no uid sweep is ever needed; and forking a sweep helper from here
        # would put it inside that namespace, as this process unshared it.
        self.direct = known is not None
        self.ctl: dict[str, Any] = dict(known or {})
        self.sweep_uid = None if self.direct else spec.worker.uid
        # A uid of the mapped user namespace (subids.py): swept from inside it, found on the
        # host by the uid it maps to.
        keeper = subids.current() if spec.shared_user_namespace else None
        self.sweep_ns = keeper.fd if keeper is not None else None
        self.sweep_host_uid = (
            keeper.ids.host_uid(self.sweep_uid)
            if keeper is not None and self.sweep_uid is not None
            else self.sweep_uid
        )
        # This process is a child subreaper (the warm parent's job): S's orphans are ours.
        self.subreaper = subreaper
        self.output = bytearray()
        self.reaped = False
        self.killed_at: float | None = None
        self.sel = selectors.DefaultSelector()
        for fd, kind in ((msg_r, "msg"), (out_r, "out"), (ctl_r, "ctl"), (stop_r, "stop")):
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
        return any(key.data not in ("exit", "stop") for key in self.sel.get_map().values())

    def _handle(self, key: selectors.SelectorKey) -> None:
        fd = int(key.fd)
        if key.data == "stop":
            # The stop pipe's other end closed: the warm parent was told to stop this run,
            # or it is gone. End the run now, as at the deadline, and report it.
            self.sel.unregister(fd)
            if self.killed_at is None:
                self.outcome.stopped = "its warm parent stopped it, or went away"
                self._kill_all()
            return
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
            kill_every_process_of(uid, self.sweep_ns)

    def _finish(self) -> None:
        if not self.reaped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            self._try_reap(0)
        uid = self.sweep_uid
        if uid is not None and not self._left_nothing():
            # kill -1 can miss a process that is being forked at that instant: check, repeat.
            for _ in range(50):
                kill_every_process_of(uid, self.sweep_ns)
                if not processes_of(self.sweep_host_uid or uid):
                    break
                time.sleep(0.002)
        if self.subreaper:
            left = end_descendants()
            if left:
                self.ctl["left"] = left
        for key in list(self.sel.get_map().values()):
            fd = int(key.fd)
            self.sel.unregister(fd)
            with contextlib.suppress(OSError):
                os.close(fd)
        self.sel.close()
        self.outcome.wall_s = round(time.monotonic() - self.start, 6)
        self.outcome.output = self.output.decode("utf-8", errors="replace")
        self.outcome.isolation = {key: self.ctl[key] for key in _RECORDED if key in self.ctl}
        if self.outcome.channel_error is None and self.reader.pending:
            self.outcome.channel_error = "the child's last message was cut off"
