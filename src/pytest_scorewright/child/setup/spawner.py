"""The run's spawner: PID 1 (or S, without namespaces) starts the test process and, when
isolation is by process, the candidate's process each time the test process asks.

The spawner is ours and stays privileged inside the run's namespaces, and its memory holds
nothing of the tests (it was forked before any test module was read), so a candidate process
forked from it starts clean: it never sees the test process's memory. The test process asks
over a socket pair made before it was forked; the spawner answers with one end of a fresh
socket pair whose other end the candidate's process holds.

The candidate's process is confined like the test process (rlimits, Landlock, the same
sandbox uid, so files the test makes in its tmp_path are the candidate's to read) and more:
the tests and the test process's home are hidden under empty read-only tmpfs mounts in a
mount namespace of its own (where the spawner may make one), and Landlock allows it neither.
The test process is non-dumpable, so the candidate's process, though of the same uid, can
neither ptrace it nor read its memory or descriptors through /proc.
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import select
import signal
import socket
from collections.abc import Callable
from typing import NoReturn

from pytest_scorewright.child.setup.confine import confine_worker
from pytest_scorewright.kernel import linux
from pytest_scorewright.protocol.wire import SandboxSpec

_EXIT_CANDIDATE_SETUP = 73
#: Candidate processes one run may start (the first, and restarts after crashes and
#: abandoned calls).
MAX_SPAWNS = 32


def run_worker(
    spec: SandboxSpec,
    start_worker: Callable[[int | None], NoReturn],
    after_fork: Callable[[int], None],
) -> int:
    """Fork the test process (``start_worker(spawner_fd)``), call ``after_fork(pid)`` (which
    must close what no candidate process may inherit: the message pipe), serve the test
    process's requests for candidate processes, and return its wait status once it ended."""
    if spec.candidate is None:
        worker = os.fork()
        if worker == 0:
            start_worker(None)
        after_fork(worker)
        return reap_until(worker)
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    if spec.cpu is not None:
        # The test process and the candidate's process take turns, never run at once: on
        # one CPU each call's wakeup stays on that CPU (sandbox/placement.py says why).
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, {spec.cpu})
    worker = os.fork()
    if worker == 0:
        ours.close()
        theirs.set_inheritable(True)
        start_worker(theirs.fileno())
    theirs.close()
    after_fork(worker)
    return _serve(spec, worker, ours)


def _serve(spec: SandboxSpec, worker: int, requests: socket.socket) -> int:
    """Answer the test process: ``s`` asks for a candidate process (one end of its socket
    comes back), ``?`` asks how the last one ended (its wait status as text, once it has),
    ``w`` where the last one is (its stack, as faulthandler writes it: a test timed out in a
    call to it), ``p`` its pid (0 if none is alive)."""
    spawned = 0
    ended: dict[int, int] = {}  # candidate processes reaped: pid -> wait status
    last: int | None = None
    stack: int | None = None  # the read end of the last one's stack pipe
    pidfd: int | None = None
    with contextlib.suppress(AttributeError, OSError):
        pidfd = os.pidfd_open(worker)
    watched = [requests.fileno(), *([pidfd] if pidfd is not None else [])]
    open_requests = True
    try:
        while True:
            status = _reap_some(worker, ended)
            if status is not None:
                return status
            ready, _, _ = select.select(watched if open_requests else watched[1:], [], [], 0.05)
            if requests.fileno() in ready:
                try:
                    asked = requests.recv(1)
                except OSError:
                    asked = b""
                if not asked:
                    open_requests = False  # the test process closed it (or ended)
                    if pidfd is None:
                        return reap_until(worker)
                    continue
                if asked == b"?":
                    how = _how_it_ended(last, worker, ended) if last is not None else "none"
                    with contextlib.suppress(OSError):
                        requests.sendall(how.encode()[:60].ljust(60))
                elif asked == b"p":
                    # Its pid, for the benchmark fixture to read its CPU time in /proc (the
                    # candidate's own word on it could be anything).
                    pid = last if last is not None and last not in ended else 0
                    with contextlib.suppress(OSError):
                        requests.sendall(pid.to_bytes(4, "big"))
                elif asked == b"w":
                    text = b""
                    if last is not None and stack is not None and last not in ended:
                        text = _stack_of(last, stack)
                    with contextlib.suppress(OSError):
                        requests.sendall(len(text).to_bytes(2, "big") + text)
                elif spawned < MAX_SPAWNS:
                    spawned += 1
                    if last is not None and last not in ended:
                        # The test process gave up on it (a call it abandoned at a test's
                        # timeout): it may still be busy with that call; one at a time.
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(last, signal.SIGKILL)
                    if stack is not None:
                        os.close(stack)
                    last, stack = _answer_with_candidate(spec, requests)
                else:
                    requests.close()
                    open_requests = False
    finally:
        if pidfd is not None:
            os.close(pidfd)
        if stack is not None:
            os.close(stack)


#: The most of a candidate process's stack sent back, and how long it may take to come.
_STACK_BYTES = 8000
_STACK_WAIT_S = 0.5
#: How long a pause after the dump's first bytes ends it. faulthandler writes the whole dump
#: from one signal handler, in C, in microseconds; each test a hung candidate times out in
#: waits this once (it was 50 ms: a tenth of a second per 0.2 s short limit).
_STACK_TAIL_S = 0.005


def _stack_of(pid: int, stack: int) -> bytes:
    """Ask the candidate's process for its stack (SIGUSR2: faulthandler writes every thread's
    frames into the pipe from its C signal handler, however busy the Python code is); what
    arrives within a moment, bounded. Whatever it writes is the candidate's: the test process
    keeps only file names and line numbers, cleaned."""
    with contextlib.suppress(BlockingIOError, OSError):
        while os.read(stack, 65536):  # anything written before: not this answer
            pass
    try:
        os.kill(pid, signal.SIGUSR2)
    except ProcessLookupError:
        return b""
    got = b""
    wait = _STACK_WAIT_S
    while len(got) < _STACK_BYTES:
        ready, _, _ = select.select([stack], [], [], wait)
        if not ready:
            break
        try:
            chunk = os.read(stack, _STACK_BYTES - len(got))
        except BlockingIOError:
            continue
        except OSError:
            break
        if not chunk:
            break
        got += chunk
        wait = _STACK_TAIL_S  # the rest of the dump follows at once
    return got


def _reap_some(worker: int, ended: dict[int, int]) -> int | None:
    """Reap every child that has ended (candidate processes, orphans); the worker's wait
    status if it was one of them."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return 0
        if pid == 0:
            return None
        if pid == worker:
            return status
        ended[pid] = status


def _how_it_ended(pid: int, worker: int, ended: dict[int, int]) -> str:
    """``exit N``, ``signal N``, or ``alive`` for a candidate process that closed its end of
    the channel but did not end (it is killed now: it has no way to be asked anything)."""
    for _ in range(50):  # it closed the channel as it ended: the reap is a moment away
        if pid in ended:
            break
        _reap_some(worker, ended)
        if pid not in ended:
            select.select([], [], [], 0.01)
    status = ended.get(pid)
    if status is None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        return "alive"
    code = os.waitstatus_to_exitcode(status)
    return f"signal {-code}" if code < 0 else f"exit {code}"


def _answer_with_candidate(spec: SandboxSpec, requests: socket.socket) -> tuple[int, int]:
    """Fork a candidate process; its pid and the read end of the pipe its stack comes by."""
    for_test, for_candidate = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    stack_read, stack_write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the candidate's process; tested end to end
        requests.close()
        for_test.close()
        os.close(stack_read)
        _candidate_process(spec, for_candidate, stack_write)
    for_candidate.close()
    os.close(stack_write)
    os.set_blocking(stack_read, False)
    with contextlib.suppress(OSError):
        socket.send_fds(requests, [b"c"], [for_test.fileno()])
    for_test.close()
    return pid, stack_read


def _candidate_process(spec: SandboxSpec, sock: socket.socket, stack: int) -> NoReturn:
    plan = spec.candidate
    try:
        assert plan is not None  # noqa: S101 - only forked in process isolation
        # Nothing of the spawner's but the call socket, the stack pipe and stdio: above all
        # not a control or message pipe of the run, which the candidate could write to.
        keep = sorted((sock.fileno(), stack))
        os.closerange(3, keep[0])
        os.closerange(keep[0] + 1, keep[1])
        os.closerange(keep[1] + 1, 1 << 20)
        # Where it is when a test times out in a call to it (the spawner asks: ``w``).
        faulthandler.register(signal.SIGUSR2, file=stack, all_threads=True, chain=False)
        if not spec.gvisor:  # there a mount would show in every process of the sandbox
            _hide(spec.hide)
        confine_worker(plan)
        from pytest_scorewright.child.apart.candidate import start

        start(sock, spec.candidate_path, spec.watch, spec.candidate_modules, spec.coverage)
    except BaseException:  # noqa: S110 - the test process sees the channel close
        pass
    os._exit(_EXIT_CANDIDATE_SETUP)


def _hide(paths: tuple[str, ...]) -> None:
    """Cover ``paths`` with empty read-only tmpfs mounts in a mount namespace of this process's
    own, where it may make one (the spawner is privileged in the run's namespaces); elsewhere
    Landlock alone keeps them unreadable."""
    if not paths:
        return
    try:
        linux.unshare(linux.CLONE_NEWNS)
    except OSError:
        return
    for path in paths:
        with contextlib.suppress(OSError):
            flags = linux.MS_RDONLY | linux.MS_NOSUID | linux.MS_NODEV
            linux.mount("tmpfs", path, "tmpfs", flags, "size=4k,mode=555")


def reap_until(worker: int) -> int:
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            return 0
        except InterruptedError:
            continue
        if pid == worker:
            return status
