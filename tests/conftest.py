from __future__ import annotations

import contextlib
import json
import os
import platform
import shutil
import signal
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from pytest_scorewright.result import ScoreResult
from pytest_scorewright.sandbox import uids
from pytest_scorewright.sandbox.host import probe
from pytest_scorewright.sandbox.uids import BLOCK
from pytest_scorewright.schema import schema

pytest_plugins = ["pytester"]

# A suite started as a background job of a non-interactive shell (`pytest -n 4 &` in a script,
# as a load test or a CI step may start it) inherits SIGINT ignored (POSIX), and so does every
# process it starts: the tests of Ctrl-C (a `scorewright` command interrupted, a run's
# `_thread.interrupt_main()`) then see nothing happen (three failed so beside two CPU-bound
# jobs, the suite started from a script). Python's own handler, as a start at a terminal has.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _compile_the_package() -> None:
    """Write the package's bytecode once, before the workers start, where an environment
    says not to (``PYTHONDONTWRITEBYTECODE``, as many container images set): every process
    the suite starts that imports the package (the workers, each warm parent and janitor,
    each ``scorewright`` command, nested sessions, Ray and Dask workers) otherwise compiles
    its ~170 modules from source, ~0.15 s of CPU each time. py_compile writes whatever the
    flag says; only the reading processes honour it. Not into site-packages: pip compiled
    those at install. Where the tree is read-only, each process compiles as before."""
    if not sys.flags.dont_write_bytecode or "PYTEST_XDIST_WORKER" in os.environ:
        return
    import compileall

    import pytest_scorewright

    with contextlib.suppress(OSError):
        compileall.compile_dir(Path(pytest_scorewright.__file__).parent, quiet=2, workers=1)


_compile_the_package()

# Corpus tasks are data (candidates and their tests), run by test_integrity_corpus.py.
collect_ignore = ["corpus", "isolation_task", "speed_task", "flaky_task"]

# Tasks prepared here keep no reference times between preparations (scoring/kept_times.py):
# each test measures its task afresh, whatever ran before it on this machine; the tests of
# the kept times themselves name a directory of their own.
os.environ["SCOREWRIGHT_TIMES_DIR"] = "off"

#: pytest-benchmark (in the dev extra, for tests/plugin/test_benchmark_fixture.py) is loaded by
#: pytest into every run it starts, where it writes .benchmarks/ and takes the `benchmark`
#: fixture; pytester runs leave it out unless a test says otherwise.
WITHOUT_PYTEST_BENCHMARK = "-p no:benchmark"


@pytest.fixture(autouse=True)
def _pytester_without_pytest_benchmark(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    if "pytester" in request.fixturenames:
        request.getfixturevalue("pytester")  # it clears PYTEST_ADDOPTS when it starts
        monkeypatch.setenv("PYTEST_ADDOPTS", WITHOUT_PYTEST_BENCHMARK)


#: What a test must leave as it found it: an ignored or blocked signal is inherited by every
#: process the worker starts later (both survive exec), and a SIGINT handler other than
#: Python's makes a later test's `_thread.interrupt_main()` do nothing. (A Python handler
#: for SIGTERM, as Ray's and Dask's drivers install, is reset by exec: let pass.)
_KEPT_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGCHLD)


def _signal_state() -> tuple[object, ...]:
    blocked = frozenset(signal.pthread_sigmask(signal.SIG_BLOCK, []))
    ignored = frozenset(s for s in _KEPT_SIGNALS if signal.getsignal(s) == signal.SIG_IGN)
    return (signal.getsignal(signal.SIGINT), ignored, blocked)


@pytest.fixture(autouse=True)
def _signals_left_as_found() -> Iterator[None]:
    before = _signal_state()
    yield
    after = _signal_state()
    if after != before:
        handler, ignored, blocked = before
        signal.signal(signal.SIGINT, handler)  # type: ignore[arg-type]
        for sig in _KEPT_SIGNALS:
            if sig not in ignored and signal.getsignal(sig) == signal.SIG_IGN:  # type: ignore[operator]
                signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)  # type: ignore[arg-type]
        pytest.fail(f"the test left this process's signals changed: {before} -> {after}")


@dataclass
class ScoredRun:
    run: pytest.RunResult
    data: dict[str, Any]

    @property
    def result(self) -> ScoreResult:
        return ScoreResult.from_dict(self.data)

    def outcomes(self) -> dict[str, str]:
        return {t["nodeid"]: t["outcome"] for t in self.data["tests"]}

    def test(self, suffix: str) -> dict[str, Any]:
        matches = [t for t in self.data["tests"] if t["nodeid"].endswith(suffix)]
        assert len(matches) == 1, (suffix, [t["nodeid"] for t in self.data["tests"]])
        match: dict[str, Any] = matches[0]
        return match

    def signal(self, name: str) -> float | None:
        for s in self.data["signals"]:
            if s["name"] == name:
                return float(s["value"])
        return None

    def need(self, name: str) -> float:
        """The value of a signal that must be present."""
        value = self.signal(name)
        assert value is not None, f"signal {name} is absent"
        return value


def validate(data: dict[str, Any]) -> None:
    jsonschema.validate(data, schema())


RunScored = Callable[..., ScoredRun]


@pytest.fixture
def run_scored(pytester: pytest.Pytester) -> RunScored:
    """Run pytest (in-process unless subprocess=True) with --scorewright-out; load and
    schema-validate the result."""

    def run(*args: str, subprocess: bool = False, out: str = "fitness.json") -> ScoredRun:
        argv = [f"--scorewright-out={out}", "-p", "no:cacheprovider", *args]
        result = pytester.runpytest_subprocess(*argv) if subprocess else pytester.runpytest(*argv)
        data = json.loads((pytester.path / out).read_text(encoding="utf-8"))
        validate(data)
        return ScoredRun(result, data)

    return run


def sandbox_processes(caller_pid: int, since: float | None = None) -> list[int]:
    """Processes of the runs of an Evaluator in process ``caller_pid`` (read from
    /proc/<pid>/status: a non-dumpable process's /proc directory belongs to root).

    As root, or an ordinary user with subordinate ids: those running as one of the sandbox
    uids the Evaluator hands out; other processes' sandboxes, say a second test run on the
    machine, are not counted. Otherwise the runs have the caller's own uid: those of that
    uid started after ``since`` (a ``boot_clock()`` reading) that are neither the caller
    nor its children (its warm parents); other processes of the uid started meanwhile
    would be counted too, so tests that drop to a uid of their own (tests/modes.py) are
    exact."""
    features = probe()
    low = uids.block(*features.root_uids, caller_pid)[0] if features.root_uids else -BLOCK
    mine = os.getuid()
    ids = features.subordinate
    if ids is not None:  # an ordinary user's runs have uids of their own: subids.py
        first, _ = ids.block(caller_pid)
        low, mine = ids.host_uid(first), 0
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                status = Path(f"/proc/{entry}/status").read_text()
                stat = Path(f"/proc/{entry}/stat").read_bytes()
            except OSError:
                continue
            if "\nState:\tZ" in status:
                continue  # dead: only a pid left for init to reap (a VM's init may never)
            uid = int(next((ln.split()[1] for ln in status.splitlines() if ln[:4] == "Uid:"), 0))
            if mine == 0:
                if low <= uid < low + BLOCK:
                    found.append(int(entry))
                continue
            fields = stat.rsplit(b")", 1)[1].split()
            ppid, started = int(fields[1]), int(fields[19]) / os.sysconf("SC_CLK_TCK")
            if uid != mine or int(entry) == caller_pid or ppid == caller_pid:
                continue
            if (since is None or started >= since - 0.05) and _ours(int(entry), caller_pid):
                found.append(int(entry))
    return _lasting(found) if mine != 0 else found


#: How long an orphan of the caller's uid must last to count: a run whose warm parent was
#: killed, in another pytest-xdist worker's test of that, dies within milliseconds.
ORPHAN_GRACE_S = 0.5


def _lasting(found: list[int]) -> list[int]:
    """``found`` less orphans that are gone or dead after :data:`ORPHAN_GRACE_S`."""
    orphans = [pid for pid in found if _parent(pid) <= 1]
    if not orphans:
        return found
    time.sleep(ORPHAN_GRACE_S)
    gone = {pid for pid in orphans if _parent(pid) < 0}
    return [pid for pid in found if pid not in gone]


def _parent(pid: int) -> int:
    """``pid``'s parent; -1 if it is gone or a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return -1
    fields = stat.rsplit(b")", 1)[1].split()
    return -1 if fields[0] == b"Z" else int(fields[1])


def _ours(pid: int, caller_pid: int) -> bool:
    """Whether ``pid`` (of the caller's uid) may be one of the caller's runs: it descends
    from the caller, or it was orphaned (its parent is init: a run's daemon that got out)
    after the caller started. A run of another process of the same uid (a second
    pytest-xdist worker) is neither, nor is the user's own older orphan (a tmux server, the
    shell that started this test run in the background)."""
    if _started(pid) < _started(caller_pid):
        return False
    current, first = pid, True
    for _ in range(64):
        try:
            stat = Path(f"/proc/{current}/stat").read_bytes()
        except OSError:
            return True  # gone meanwhile: count it, as the caller's check did
        ppid = int(stat.rsplit(b")", 1)[1].split()[1])
        if ppid == caller_pid:
            return True
        if ppid <= 1:
            return first  # an orphan is the caller's to answer for; a long chain is not
        current, first = ppid, False
    return False


def _started(pid: int) -> float:
    """When ``pid`` started, in clock ticks since boot (0 if it is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return 0.0
    return float(stat.rsplit(b")", 1)[1].split()[19])


def boot_clock() -> float:
    """Seconds since boot, the clock of /proc/<pid>/stat's start times."""
    return time.clock_gettime(time.CLOCK_BOOTTIME)


def slow_in_first_call(source: str, function: str, seconds: float) -> str:
    """``source`` with ``function`` sleeping ``seconds`` in its first call: slow while its
    runs are alive, without working at import (which is evidence: import_time_work)."""
    return source + (
        f"\nimport time\n_slow_{function} = {function}\n_slept = []\n\n"
        f"def {function}(*args, **kwargs):\n"
        "    if not _slept:\n"
        f"        _slept.append(time.sleep({seconds}))\n"
        f"    return _slow_{function}(*args, **kwargs)\n"
    )


#: Evidence read off the wall clock, which a loaded machine moves: the same candidate may show
#: it where it was scored once and not where it was scored again (in CI, a conftest-gaming
#: candidate, rejected both times, showed `timing_mismatch` in a pipeline process only).
#: Tests that compare results scored in two places leave these out.
ON_THE_CLOCK = frozenset({"timing_mismatch", "benchmark_noisy", "import_time_work"})


#: Modules by the wall time their tests took in all (beside two CPU-bound jobs, `-n 4`,
#: 2026-11-27: 533 s for the first, whose tests each rerun whole test modules as another
#: host, down to 26 s), started longest first, so that the workers finish close together
#: (each module's tests run in one worker, below).
_LONGEST_FIRST = (
    "test_sandbox_modes.py",
    "test_verify_dataset.py",
    "test_warm_and_many.py",
    "test_audit.py",
    "test_objectives_sandbox.py",
    "test_remote.py",
    "test_sandbox_attacks.py",
    "test_openevolve_adapter.py",
    "test_candidate_coverage.py",
    "test_test_timeout.py",
    "test_gvisor.py",
    "test_verify_real.py",
    "test_pipelines.py",
    "test_integrity_corpus.py",
    "test_timed_results.py",
    "test_loop_api.py",
    "test_ctrf.py",
    "test_verify_environment.py",
    "test_real_code.py",
    "test_fuzz_parent.py",
    "test_boundary.py",
    "test_benchmark_fixture.py",
    "test_xdist_and_coverage.py",
    "test_cli_score.py",
    "test_hostile_channel.py",
    "test_reward_service_shapes.py",
    "test_report.py",
)

#: Modules whose tests xdist spreads over its workers under ``--dist loadscope``
#: (pyproject.toml); every other module's tests run in one worker, so that its module-scoped
#: fixtures (an Evaluator and its reference runs, a corpus scored once) are made once, not
#: once per worker: 21% less CPU on seven such modules at -n 4 (CONTRIBUTING.md). These two
#: are spread: the matrix's tests are each a minute of nested sessions, and the Ray tests go
#: last in every worker (below), where as one unit they would be one worker's 2-minute tail.
_SPREAD = frozenset({"test_sandbox_modes.py", "test_ray.py"})


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under ``--dist loadscope``, one unit of work per module but those in ``_SPREAD``, in
    the order collected. (xdist's own ``loadgroup`` marks do nothing under pytest 9.2: it
    renames items through an attribute pytest no longer reads.)"""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ByModule(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return nodeid if Path(module).name in _SPREAD else module

        def _reschedule(self, node: Any) -> None:
            # One unit waiting behind the running one, not xdist's up to three: the last
            # units are single Ray tests of 10-40 s, and beside two CPU-bound jobs one
            # worker held three of them while another had none (a 70 s tail, 2026-11-28).
            if self._pending_of(self.assigned_work[node]) <= 1 or not self.workqueue:
                super()._reschedule(node)

    return ByModule(config, log)


#: Modules without a sandbox whose tests run pytest sessions of their own (xdist, coverage,
#: pytest-benchmark) or fuzz the parent: over half a second a test, so `slow` too.
_SLOW_MODULES = ("test_fuzz_parent.py", "test_xdist_and_coverage.py", "test_benchmark_fixture.py")


#: Modules run after every other test of their xdist worker.
_AFTER_EVERYTHING = frozenset({"test_ray.py"})
#: Modules with runs forked from the test process itself (``warm=False``), run first.
_COLD_FIRST = frozenset(
    {"test_test_timeout.py", "test_reference_applicability.py", "test_sandbox_modes.py"}
)


#: Whether the running test started a process (a subprocess, a fork, a spawn): set by an
#: audit hook, read after each test (``slow`` must say so: the fast loop starts none).
_STARTED: list[str] = []
_PROCESS_EVENTS = frozenset({"subprocess.Popen", "os.fork", "os.forkpty", "os.posix_spawn"})


def _note_process(event: str, args: tuple[object, ...]) -> None:
    if event in _PROCESS_EVENTS and not _STARTED:
        _STARTED.append(event)
        if os.environ.get("SW_DEBUG_STARTS"):  # which call started it, when that is unclear
            import traceback

            traceback.print_stack(limit=12)


# platform.processor() runs `uname -p` once a process, in whichever test builds the first
# result's environment: run it here, before the hook counts.
platform.processor()
sys.addaudithook(_note_process)


#: CPU seconds (this process's) over which a test must be marked ``slow``: well above what
#: a fast test takes (under 0.5 s, hypothesis's included), so that a test's first import of
#: a library, or a slower machine, does not fail it.
_FAST_CPU_S = 3.0


#: Where each test's CPU is appended, where asked (``SCOREWRIGHT_CPU_LOG=FILE``), a line of
#: tab-separated columns: what the test's own process spent, what the processes it waited
#: for spent (``os.times``: a warm parent's, and every run it forked, count when the test or
#: fixture that closes it reaps it), its wall time, its group's CPU (below; "-" where there
#: is none) and its node id; for finding what makes the suite slow beside other jobs.
_CPU_LOG = os.environ.get("SCOREWRIGHT_CPU_LOG")
#: Where root may make one (cgroup v1's cpuacct), each process that logs moves itself into
#: a CPU-accounting group of its own first, and each line also says what every process it
#: started spent during the test, reaped or not: ``os.times`` misses a warm parent that
#: outlives the test, and the runs it forked (2026-11-27: it counted 635 s of the 1,145 s
#: such groups did; the modes matrix 70 s of its 212 s).
_CPUACCT = Path("/sys/fs/cgroup/cpuacct")
_cpu_group: list[Path | None] = []


def _group_cpu_s() -> float | None:
    """CPU seconds of this process's own accounting group so far (made on first use)."""
    if not _cpu_group:
        made = _CPUACCT / f"scorewright-tests-{os.getpid()}"
        for left in _CPUACCT.glob("scorewright-tests-*"):
            with contextlib.suppress(OSError):
                left.rmdir()  # an earlier session's, empty now (one still in use refuses)
        try:
            made.mkdir(exist_ok=True)
            (made / "cgroup.procs").write_text(str(os.getpid()))
            _cpu_group.append(made)
        except OSError:
            _cpu_group.append(None)  # not root, or no cgroup v1 cpuacct: os.times alone
    group = _cpu_group[0]
    if group is None:
        return None
    with contextlib.suppress(OSError, ValueError):
        return int((group / "cpuacct.usage").read_text()) / 1e9
    return None


def pytest_unconfigure() -> None:
    # Back to the root group, and this one removed (where a process it started is still in
    # it, the group stays until the next logging session's first test removes it).
    group = _cpu_group[0] if _cpu_group else None
    if group is not None:
        with contextlib.suppress(OSError):
            (_CPUACCT / "cgroup.procs").write_text(str(os.getpid()))
            group.rmdir()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> object:
    if not _CPU_LOG:
        return (yield)
    grouped = _group_cpu_s()
    before = os.times()
    outcome = yield
    after = os.times()
    own = after.user + after.system - before.user - before.system
    waited = (
        after.children_user + after.children_system
        - before.children_user - before.children_system
    )  # fmt: skip
    group = "-"
    if grouped is not None and (now := _group_cpu_s()) is not None:
        group = f"{now - grouped:.3f}"
    wall = after.elapsed - before.elapsed
    line = f"{own:.3f}\t{waited:.3f}\t{wall:.3f}\t{group}\t{item.nodeid}\n"
    with contextlib.suppress(OSError), open(_CPU_LOG, "a", encoding="utf-8") as log:
        log.write(line)  # (a nested session as another uid may not write it: no matter)
    return outcome


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> object:
    # The fast loop (-m "not slow") starts no process and spends little CPU: a test that
    # does either must say so with `slow` (sandbox tests are slow already), or it fails
    # here, so that the fast loop stays fast as tests are added.
    _STARTED.clear()
    cpu = time.process_time()
    outcome = yield
    cpu = time.process_time() - cpu
    if not item.get_closest_marker("slow"):
        if _STARTED:
            pytest.fail(f"started a process ({_STARTED[0]}): mark the test @pytest.mark.slow")
        if cpu > _FAST_CPU_S:
            pytest.fail(f"took {cpu:.1f}s of CPU: mark the test @pytest.mark.slow")
    return outcome


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # `slow`: every test that forks a sandbox, and the slow modules above; `-m "not slow"` is
    # the fast loop (CONTRIBUTING.md states its time).
    for item in items:
        if item.get_closest_marker("sandbox") or item.path.name in _SLOW_MODULES:
            item.add_marker(pytest.mark.slow)
    # A stable sort on a fixed key: every xdist worker gets the same order, as it must. The
    # Ray tests go last: a Ray driver leaves native threads in its process (gRPC's) after
    # ray.shutdown(), and a test that forks runs from its own process (warm=False) must not
    # come after them in the same worker (a fork of a multi-threaded process; once, the
    # forked collection died without a word).
    # Modules that fork runs from this process (warm=False) go first, while the worker has
    # not yet gathered the threads other tests leave (warm parents' readers, servers): a
    # fork of a multi-threaded process can die in the child (twice in CI: "no tests were
    # collected").
    # Then by module name, not folder: the order the workers share the long modules in
    # stays the one measured before tests moved into folders (CI's time depends on it).
    items.sort(
        key=lambda item: (
            item.path.name in _AFTER_EVERYTHING,
            item.path.name not in _COLD_FIRST,
            _LONGEST_FIRST.index(item.path.name)
            if item.path.name in _LONGEST_FIRST
            else len(_LONGEST_FIRST),
            item.path.name,
        )
    )


def quickstart_tasks(root: Path) -> Path:
    """A tasks directory (pytest_scorewright/task_dirs.py) holding the quickstart example as
    the task ``rle``, for the RL-facing faces' tests."""
    quickstart = Path(__file__).resolve().parent.parent / "examples" / "quickstart"
    for name in ("tests", "heldout", "reference"):
        ignore = shutil.ignore_patterns("__pycache__")
        shutil.copytree(quickstart / name, root / "rle" / name, ignore=ignore)
    (root / "rle" / "scorewright.json").write_text('{"timeout_s": 30}', encoding="utf-8")
    return root


def running(server: Any) -> Iterator[str]:
    """``server`` (a reward_service.RewardServer) serving in a thread: yields its URL, and
    shuts it down and closes it after."""
    import threading

    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
