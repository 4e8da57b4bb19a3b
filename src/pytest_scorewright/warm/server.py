"""The warm parent's own process (``python -m pytest_scorewright.warm.server``).

Started by :class:`~pytest_scorewright.warm.parent.WarmParent`. It imports pytest, pluggy,
pytest-timeout and the modules the user preloads, never a candidate or a test module, freezes
the garbage collector's view of them, and then serves requests: for each one it forks a job
process that runs :func:`run_sandboxed` (the sandbox and deadline logic) and sends back what
the job observed. Several jobs run at once; this process stays single-threaded.

Repeated ``pytest.main`` in one process is wrong (stale modules, nothing collected): only
forks ever run pytest, and each fork's copy is thrown away.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import importlib
import json
import os
import selectors
import shutil
import signal
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_scorewright.child.shared.monitor import remember_identities
from pytest_scorewright.protocol.channel import FrameReader, encode_frame, frame
from pytest_scorewright.protocol.wire import (
    WARM_DONE,
    WARM_STOP,
    SandboxSpec,
    outcome_to_wire,
    spec_from_wire,
)
from pytest_scorewright.sandbox import owner, subids
from pytest_scorewright.sandbox.launch import run_sandboxed
from pytest_scorewright.sandbox.placement import free_cpu
from pytest_scorewright.suite.warm_config import prepare
from pytest_scorewright.warm.parent import UNLIMITED

#: Ended runs' work dirs kept before those already removed are dropped from the list.
_PRUNE_AT = 256
#: Imported once by the warm parent, so no fork imports them again.
PRELOAD = (
    "pytest",
    "_pytest.python",
    "_pytest.runner",
    "_pytest.skipping",
    "_pytest.subtests",
    "_pytest.unittest",
    "_pytest.assertion.rewrite",
    "pluggy",
    "pytest_timeout",
    "pytest_scorewright.plugin",
    "pytest_scorewright.child.test_process.runner",
    "pytest_scorewright.child.setup.processes",
    # Isolation by process: the test process's proxies and the candidate's process.
    "pytest_scorewright.child.test_process.proxy",
    "pytest_scorewright.child.apart.candidate",
)

#: How long a stopped job has to end its run (kill, reap, sweep) before it is killed.
_STOP_WAIT_S = 5.0
#: Passes at removing a dead caller's directories (0.1 s apart).
_REMOVE_TRIES = 20


@dataclass
class _Job:
    """One request in flight: its job process, the pipe its answer comes on, and the write
    end of its stop pipe (closing it ends the run: deadline.py)."""

    request_id: int
    pid: int
    answer_r: int
    stop_w: int
    work_dir: str
    #: The CPU its run was placed on (``SandboxSpec.one_cpu``), if any.
    cpu: int | None = None
    answer: bytearray = field(default_factory=bytearray)


def serve(inp: int, out: int) -> None:
    """Serve run requests on ``inp`` until it closes; answer on ``out``.

    Nothing a run sends is decoded here: a job's answer (what its run sent, decoded strictly
    by the job) is relayed as it is, so no run can crash this process, which every run
    shares. A job that dies without an answer, or a request that cannot start, gets an error
    answer; this process goes on serving the others.
    """
    # The trusted caller: no limits.
    requests = FrameReader(max_frame=UNLIMITED, max_total=UNLIMITED, max_messages=UNLIMITED)
    sel = selectors.DefaultSelector()
    sel.register(inp, selectors.EVENT_READ, None)
    jobs: dict[int, _Job] = {}  # by the read end of the job's answer pipe
    fixed_roots: set[str] = set()
    #: Work dirs of runs that ended: the caller removes each once it has read the answer
    #: (and every run of the same candidate has ended), so a caller killed in between leaves
    #: them to us. Pruned of those already gone.
    ended: list[str] = []
    # A BrokenPipeError: the caller's answer pipe closed while its requests pipe had not (yet)
    # reached its end: a killed caller whose death shows on the answer pipe first (an answer
    # and the end of the requests in one wake-up), or one whose requests pipe another process
    # still holds. Either way nobody reads answers: end as when the requests end.
    # The caller watched directly too: the requests pipe does not end while a process the
    # caller forked still holds it (sandbox/owner.py).
    caller = owner.owner_pid()
    pidfd = owner.watch(caller)
    pool = owner.watch(owner.pool_owner_pid())
    for watched in (pidfd, pool):
        if watched is not None and watched >= 0:
            sel.register(watched, selectors.EVENT_READ, "owner")
    if pidfd != -1 and pool != -1:
        with contextlib.suppress(BrokenPipeError):
            _serve(inp, out, sel, requests, jobs, fixed_roots, ended, caller, pidfd)
    _caller_gone(list(jobs.values()), {*fixed_roots, *ended})


def _serve(
    inp: int,
    out: int,
    sel: selectors.BaseSelector,
    requests: FrameReader,
    jobs: dict[int, _Job],
    fixed_roots: set[str],
    ended: list[str],
    caller: int | None,
    pidfd: int | None,
) -> None:
    """The loop of :func:`serve`; returns when the requests pipe ends or the caller dies."""
    # Without a pidfd, a look at the parent pid once a second.
    every = 1.0 if caller is not None and pidfd is None else None
    while True:
        ready = sel.select(every)
        if every is not None and owner.gone(caller, pidfd):
            return
        for key, _ in ready:
            fd = int(key.fd)
            if key.data == "owner":
                return
            if key.data is None:
                data = os.read(inp, 1 << 16)
                if not data:
                    return
                for request in requests.feed(data):
                    _on_request(request, jobs, sel, inp, out, fixed_roots)
                continue
            job = jobs[fd]
            chunk = os.read(fd, 1 << 16)
            if chunk:
                job.answer += chunk
                continue
            sel.unregister(fd)
            del jobs[fd]
            ended.append(job.work_dir)  # before the answer: a write that fails leaves it ours
            _answer(out, *_finish_job(job))
            if len(ended) >= _PRUNE_AT:
                ended[:] = [path for path in ended if os.path.lexists(path)]


def _on_request(
    request: dict[str, Any],
    jobs: dict[int, _Job],
    sel: selectors.BaseSelector,
    inp: int,
    out: int,
    fixed_roots: set[str],
) -> None:
    request_id = int(request["id"])
    if request["type"] == WARM_STOP:
        for job in jobs.values():
            if job.request_id == request_id and job.stop_w >= 0:
                os.close(job.stop_w)
                job.stop_w = -1
        return
    try:
        spec = spec_from_wire(request["spec"])
        if spec.one_cpu:
            spec = dataclasses.replace(spec, cpu=free_cpu([j.cpu for j in jobs.values()]))
        fixed_roots.add(spec.fixed_root)
        others = [j.stop_w for j in jobs.values() if j.stop_w >= 0]
        job = _start_job(request_id, spec, (inp, *others))
    except Exception as exc:  # a bug of ours, or the machine (fork: EAGAIN): this run only
        _answer(out, {"type": WARM_DONE, "id": request_id, "error": f"could not start: {exc!r}"})
        return
    jobs[job.answer_r] = job
    sel.register(job.answer_r, selectors.EVENT_READ, "job")


def _finish_job(job: _Job) -> tuple[dict[str, Any], bytes]:
    """The ``done`` header for a job that ended, and its answer (empty if it died)."""
    os.close(job.answer_r)
    if job.stop_w >= 0:
        os.close(job.stop_w)
    _, status = os.waitpid(job.pid, 0)
    if status == 0 and job.answer:
        return {"type": WARM_DONE, "id": job.request_id, "body": True}, bytes(job.answer)
    code = os.waitstatus_to_exitcode(status)
    how = f"killed by signal {-code}" if code < 0 else f"exit status {code}"
    error = f"the job process died without an answer ({how})"
    return {"type": WARM_DONE, "id": job.request_id, "error": error}, b""


def _answer(out: int, header: dict[str, Any], body: bytes = b"") -> None:
    """A ``done`` header, and with ``"body": true`` the job's answer as the next frame."""
    _write_all(out, encode_frame(header) + (frame(body) if header.get("body") else b""))


def _caller_gone(jobs: Sequence[_Job], leftovers: set[str]) -> None:
    """The caller closed its end: it is done, or it was killed. Its runs in flight are
    stopped (each job ends its run as at the deadline: kill, reap, sweep), and the
    directories a killed caller could not remove go: the runs' work dirs, those of runs that
    ended before it could remove them, and the fixed roots (``leftovers``). A job that does
    not end within a few seconds is killed."""
    for job in jobs:
        os.close(job.answer_r)  # nobody reads answers now: a job's write fails at once
        if job.stop_w >= 0:
            os.close(job.stop_w)
            job.stop_w = -1
    deadline = time.monotonic() + _STOP_WAIT_S
    waiting = {job.pid for job in jobs}
    while waiting and time.monotonic() < deadline:
        for pid in list(waiting):
            with contextlib.suppress(ChildProcessError):
                if os.waitpid(pid, os.WNOHANG)[0] == 0:
                    continue
            waiting.discard(pid)
        time.sleep(0.01)
    for pid in waiting:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
    for path in (*(job.work_dir for job in jobs), *leftovers):
        if path:
            _remove(path)


def _remove(path: str) -> None:
    """Remove a directory a run may still be writing in: the processes of a killed job's run
    die a moment after the job (their parent-death signal), so a pass that found the tree
    changing under it is tried again."""
    for _ in range(_REMOVE_TRIES):
        shutil.rmtree(path, ignore_errors=True)
        if os.path.lexists(path) and subids.existing() is not None:
            subids.remove_left(path)  # files of a killed job's run uid
        if not os.path.lexists(path):
            return
        time.sleep(0.1)


def _start_job(request_id: int, spec: SandboxSpec, close: Sequence[int]) -> _Job:
    """Fork the job process of one run; ``close``: descriptors the job must not hold."""
    config = None
    if spec.fixed_root:  # before the fork: parsed once, shared by every later run
        config = prepare(
            spec.pytest_args, spec.plugins, spec.fixed_root, start=not spec.early_conftests
        )
    if spec.shared_user_namespace:  # made once, before the fork: every job joins it
        subids.keeper()
    answer_r, answer_w = os.pipe()
    stop_r, stop_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the job process
        code = 0
        try:
            os.close(answer_r)
            os.close(stop_w)
            null = os.open(os.devnull, os.O_RDWR)
            # The caller's requests and the other jobs' stop pipes are not this job's to
            # hold. The answer pipe to the caller (fd 1) stays open, never written: the
            # caller sees it close only once every job of a dead warm parent has ended.
            for fd in close:
                os.dup2(null, fd)
            os.close(null)
            outcome = run_sandboxed(spec, config, disposable=True, stop_r=stop_r)
            # Strict: a NaN or a lone surrogate (none can pass the run's decoding) would
            # fail here, in this job, never in the caller.
            text = json.dumps(outcome_to_wire(outcome), ensure_ascii=False, allow_nan=False)
            body = text.encode("utf-8")
            _write_all(answer_w, body)
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    os.close(answer_w)
    os.close(stop_r)
    return _Job(request_id, pid, answer_r, stop_w, os.path.dirname(spec.stage_dir), spec.cpu)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def main(argv: Sequence[str] | None = None) -> int:
    preload = list(argv if argv is not None else sys.argv[1:])
    from _pytest.config import default_plugins

    # pytest imports its ~30 built-in plugins lazily in every session: here, once, instead
    # of in every fork (measured: a 12-test run fell from ~110 ms to ~69 ms).
    builtin = [name if "." in name else f"_pytest.{name}" for name in default_plugins]
    for name in (*PRELOAD, *builtin, *preload):
        importlib.import_module(name)
    remember_identities()  # every run's monitors snapshot these (monitor.py)
    # Everything imported so far is shared with every fork; freezing keeps the collector
    # from touching (and so copying) those pages in the children.
    gc.collect()
    gc.freeze()
    sys.dont_write_bytecode = True
    inp, out = sys.stdin.fileno(), sys.stdout.fileno()
    sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - fd 1 carries frames, nothing else
    serve(inp, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
