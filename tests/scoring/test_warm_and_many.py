"""The warm parent and score_many: clean forks, many candidates at once, nothing left over."""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from pytest_scorewright.evaluator import Evaluator
from tests.conftest import boot_clock, sandbox_processes

pytestmark = pytest.mark.sandbox  # every test here forks real sandboxes

TASK = Path(__file__).resolve().parents[1] / "corpus" / "numbers"
CANDIDATES = sorted((TASK / "candidates").glob("honest_*.py"))[:4]

# Lives only in this (the caller's) process; a candidate must not find it in its memory.
CALLER_SECRET = "sw-caller-memory-secret-" + "4c1d"


def test_score_many_yields_every_candidate_once_with_its_index() -> None:
    with Evaluator(TASK / "tests", heldout=TASK / "heldout", reference=TASK / "reference") as ev:
        alone = {i: ev.score(c).signal("pass_rate") for i, c in enumerate(CANDIDATES)}
        many = dict((i, r.signal("pass_rate")) for i, r in ev.score_many(CANDIDATES, workers=2))
    assert many == alone


def test_the_callers_memory_is_not_in_the_candidates_process(tmp_path: Path) -> None:
    candidate = tmp_path / "sniff.py"
    candidate.write_text(
        textwrap.dedent(
            """
            import gc
            found = [
                v for o in gc.get_objects() if type(o) is dict
                for v in list(o.values()) if isinstance(v, str) and "caller-memory" in v
            ]
            def is_prime(n):
                raise AssertionError(repr(found))
            def gcd(a, b):
                return 0
            def fib(n):
                return 0
            """
        )
    )
    secret_holder = {"key": CALLER_SECRET}  # a live object in this process
    with Evaluator(TASK / "tests", reference=TASK / "reference") as ev:
        result = ev.score(candidate)
    assert CALLER_SECRET not in result.to_json(), secret_holder
    assert "gc_introspection" in {r.code for r in result.integrity.reasons}


def test_building_an_evaluator_forks_nothing_until_first_use() -> None:
    # An audit hook in a fresh interpreter sees every fork, spawn and subprocess there is.
    script = textwrap.dedent(
        f"""
        import sys
        started = []
        sys.addaudithook(
            lambda event, _: started.append(event)
            if event in ("os.fork", "os.posix_spawn", "subprocess.Popen", "os.exec") else None
        )
        from pytest_scorewright.evaluator import Evaluator
        ev = Evaluator({str(TASK / "tests")!r}, heldout={str(TASK / "heldout")!r},
                       reference={str(TASK / "reference")!r})
        print(len(started), flush=True)
        print(ev.score({str(TASK / "reference" / "solution.py")!r}).signal("pass_rate"))
        print(len(started) > 0, ev.prepare() is ev, len(ev.expected_visible) > 0)
        ev.close()
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    built, rate, after = done.stdout.split("\n")[:3]
    assert built == "0"
    assert rate == "1.0"  # the first score prepared it
    assert after == "True True True"


def test_an_idle_warm_parent_serves_the_next_evaluator_and_goes_when_released() -> None:
    from pytest_scorewright.warm.parent import release_spares

    release_spares()  # none kept by an earlier test of this process
    ev = Evaluator(TASK / "tests", reference=TASK / "reference")
    warm = ev._runner.warm
    assert warm is not None
    pid = warm._proc.pid
    ev.close()
    assert warm._proc.poll() is None  # kept, idle, for the next Evaluator of this process
    with Evaluator(TASK / "tests", reference=TASK / "reference", preload=["json"]) as other:
        assert other._runner.warm is not None
        assert other._runner.warm._proc.pid != pid  # another preload: a process of its own
    with Evaluator(TASK / "tests", reference=TASK / "reference") as again:
        assert again._runner.warm is not None
        assert again._runner.warm._proc.pid == pid
        assert again.score(TASK / "reference" / "solution.py").signal("pass_rate") == 1.0
        assert (
            again.score(TASK / "candidates" / "honest_wrong_fib.py").signal("pass_rate") or 0
        ) < 1
    release_spares()
    assert warm._proc.poll() is not None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_a_warm_parent_closed_with_a_run_in_flight_goes_with_it(tmp_path: Path) -> None:
    from pytest_scorewright.warm.parent import _spares, release_spares

    release_spares()
    hang = tmp_path / "hang.py"
    hang.write_text("import time\n\ndef is_prime(n):\n    time.sleep(60)\n")
    ev = Evaluator(TASK / "tests", reference=TASK / "reference")
    warm = ev._runner.warm
    assert warm is not None
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        scoring = pool.submit(ev.score, hang)
        deadline = time.monotonic() + 30
        while not warm._server._pending and time.monotonic() < deadline:
            time.sleep(0.01)
        assert warm._server._pending  # a run in flight
        ev.close()
        assert warm._proc.poll() is not None  # not kept: it stopped the run and ended
        assert not _spares
        with contextlib.suppress(Exception):
            scoring.result(timeout=60)


def test_a_prestarted_warm_parent_is_taken_by_the_next_evaluator_with_its_preload() -> None:
    from pytest_scorewright.warm.parent import _prestarted, prestart, release_spares

    prestart(["json"])
    started = _prestarted[("json",)]
    with Evaluator(TASK / "tests", reference=TASK / "reference") as other:
        assert other._runner.warm is not started  # another preload: a warm parent of its own
    with Evaluator(TASK / "tests", reference=TASK / "reference", preload=["json"]) as ev:
        assert ev._runner.warm is started
        assert ev.score(TASK / "reference" / "solution.py").signal("pass_rate") == 1.0
    assert not _prestarted
    release_spares()  # it was kept, idle, for a later Evaluator
    assert started._proc.poll() is not None


def test_when_the_caller_is_killed_its_runs_warm_parent_and_directories_go(
    tmp_path: Path,
) -> None:
    hang = tmp_path / "hang.py"
    hang.write_text(
        "def is_prime(n):\n    while True:\n        pass\n\n"
        "def gcd(a, b):\n    return 0\n\ndef fib(n):\n    return 0\n",
        encoding="utf-8",
    )
    # A work dir the sandbox uids can reach (tmp_path's parents are private to root).
    work = Path(tempfile.mkdtemp(prefix="sw-killed-caller-"))
    os.chmod(work, 0o755)  # noqa: S103 - the sandbox uids must traverse it
    try:
        _kill_the_caller_mid_run(hang, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


#: Right, but slow on the visible tests' inputs only: its held-out run ends first, and the
#: visible run goes on for seconds, so the caller can be killed with one run's work dir
#: still waiting for the other run to end before it is removed.
SLOW_ON_VISIBLE = (TASK / "reference" / "solution.py").read_text(encoding="utf-8") + (
    "\n\nimport time\n\n_right_is_prime = is_prime\n\n\n"
    "def is_prime(n):\n"
    "    if n in (2, 3, 4, 17, 1):\n"
    "        time.sleep(1.0)\n"
    "    return _right_is_prime(n)\n"
)


@pytest.mark.parametrize("after", [0.0, 0.4, 1.2, 2.5, 4.0])
def test_a_caller_killed_at_any_moment_of_a_run_leaves_nothing_behind(
    tmp_path: Path, after: float
) -> None:
    _stop_a_slow_candidates_caller(tmp_path, after, signal.SIGKILL, warm=True)


def test_a_warm_parent_whose_answers_find_nobody_cleans_up_as_when_its_caller_dies(
    tmp_path: Path,
) -> None:
    # The caller is killed; its requests pipe stays open (held by a child), so the warm
    # parent learns of the death only when an answer cannot be written: it must still stop
    # the runs and remove every directory, as when the requests pipe ends. (The same order
    # of events, by chance, in one wake-up, once left a killed caller's directories behind.)
    _stop_a_slow_candidates_caller(tmp_path, 0.0, signal.SIGKILL, warm=True, hold_requests=True)


@pytest.mark.parametrize("warm", [True, False], ids=["warm", "cold"])
@pytest.mark.parametrize(
    "how", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL], ids=["TERM", "INT", "KILL"]
)
@pytest.mark.parametrize("after", [0.3, 2.0])
def test_a_caller_stopped_by_any_signal_leaves_nothing_behind(
    tmp_path: Path, after: float, how: signal.Signals, warm: bool
) -> None:
    _stop_a_slow_candidates_caller(tmp_path, after, how, warm=warm)


@pytest.mark.parametrize("after", [0.0, 1.0, 2.5])
def test_a_callers_process_group_killed_leaves_nothing_behind(tmp_path: Path, after: float) -> None:
    # What a job scheduler, a container stop or `kill -9 -PGID` does: the caller and every
    # process of its group at once. The warm parent is in a session of its own, sees its
    # caller die, and ends the runs and removes their directories.
    _stop_a_slow_candidates_caller(tmp_path, after, signal.SIGKILL, warm=True, group=True)


@pytest.mark.parametrize("warm", [True, False], ids=["warm", "cold"])
def test_a_caller_killed_while_its_forked_workers_live_leaves_nothing_behind(
    tmp_path: Path, warm: bool
) -> None:
    # A loop that forked workers (OpenEvolve's, a multiprocessing pool): they hold copies of
    # every pipe to the warm parent or the janitor, and outlive the caller. The caller's own
    # death, seen directly, is what ends its runs.
    _stop_a_slow_candidates_caller(tmp_path, 0.5, signal.SIGKILL, warm=warm, fork_worker=True)


def _stop_a_slow_candidates_caller(
    tmp_path: Path,
    after: float,
    how: signal.Signals,
    *,
    warm: bool,
    hold_requests: bool = False,
    group: bool = False,
    fork_worker: bool = False,
) -> None:
    slow = tmp_path / "slow.py"
    slow.write_text(SLOW_ON_VISIBLE, encoding="utf-8")
    work = Path(tempfile.mkdtemp(prefix="sw-stopped-caller-"))
    os.chmod(work, 0o755)  # noqa: S103 - the sandbox uids must traverse it
    try:
        _kill_the_caller_mid_run(
            slow,
            work,
            after=after,
            how=how,
            warm=warm,
            hold_requests=hold_requests,
            group=group,
            fork_worker=fork_worker,
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _kill_the_caller_mid_run(
    hang: Path,
    work: Path,
    after: float = 0.0,
    how: signal.Signals = signal.SIGKILL,
    *,
    warm: bool = True,
    hold_requests: bool = False,
    group: bool = False,
    fork_worker: bool = False,
) -> None:
    # hold_requests: a child of the caller keeps the warm parent's requests pipe open (and
    # closes its answer pipe), so the caller's death shows only as a failed answer.
    # group: the caller leads a process group, and the whole group is killed.
    # fork_worker: a child of the caller holds every descriptor it has, and lives on.
    hold = (
        "holder = os.fork()\n"
        "if holder == 0:\n"
        "    os.close(warm._server.proc.stdout.fileno())\n"
        "    time.sleep(300)\n"
        "    os._exit(0)\n"
        "print(holder, flush=True)\n"
    )
    worker = (
        "holder = os.fork()\n"
        "if holder == 0:\n"
        "    time.sleep(300)\n"
        "    os._exit(0)\n"
        "print(holder, flush=True)\n"
    )
    script = (
        "import os, sys, time\n"
        "from pytest_scorewright.evaluator import Evaluator\n"
        "from pytest_scorewright.limits import Limits\n"
        f"ev = Evaluator({str(TASK / 'tests')!r}, heldout={str(TASK / 'heldout')!r}, "
        f"reference={str(TASK / 'reference')!r}, limits=Limits(timeout_s=120, cpu_s=120), "
        f"workdir={str(work)!r}, warm={warm!r}).prepare()\n"
        "warm, janitor = ev._runner.warm, ev._runner.planner.janitor\n"
        "keeper = warm if warm is not None else janitor\n"
        "print(keeper._proc.pid, flush=True)\n"
        + (hold if hold_requests else "")
        + (worker if fork_worker else "")
        + f"ev.score({str(hang)!r})\n"
    )
    # Where the runs have the caller's own uid (an ordinary user without subordinate ids),
    # only processes started from here on are theirs (conftest.sandbox_processes).
    since = boot_clock()
    caller = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, start_new_session=group
    )
    assert caller.stdout is not None
    keeper_pid = int(caller.stdout.readline())
    holder = int(caller.stdout.readline()) if hold_requests or fork_worker else None
    # Until both runs spin in their sandboxes (once, in a CI-style run of the whole suite,
    # not within 20 s: the process table is printed if it happens again).
    deadline = time.monotonic() + 60
    while not sandbox_processes(caller.pid, since) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sandbox_processes(caller.pid, since), ("the runs never started", _table())
    time.sleep(after)
    if os.geteuid() == 0:  # the runs' copies of the tests: no other user reads them
        readable = [
            p
            for p in _still_there(work)
            if "tests" in p.relative_to(work).parts and _others_read(p, work)
        ]
        assert readable == [], readable
    if group:
        os.killpg(caller.pid, how)
    else:
        caller.send_signal(how)
    caller.wait()
    caller.stdout.close()
    if holder is not None and fork_worker:
        try:  # the loop's worker outlives its caller: ours must not wait for it
            _wait_until_clean(keeper_pid, caller.pid, since, work, ignore=holder)
        finally:
            os.kill(holder, signal.SIGKILL)
        return
    if holder is not None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and _state(keeper_pid) not in ("gone", "Z"):
            time.sleep(0.05)  # until the runs end and their answers find nobody
        os.kill(holder, signal.SIGKILL)
    _wait_until_clean(keeper_pid, caller.pid, since, work)


def _wait_until_clean(
    keeper_pid: int, caller_pid: int, since: float, work: Path, ignore: int | None = None
) -> None:
    # ignore: the loop's own worker, which (with the runs in the caller's uid) would count as
    # a process started since.
    def left() -> list[int]:
        return [p for p in sandbox_processes(caller_pid, since) if p != ignore]

    # Clean as soon as it is (a quiet machine: well under a second); the bound is for a
    # machine at load 8, where the janitor's sweep took more than 10 s once.
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (
        _state(keeper_pid) not in ("gone", "Z") or bool(left()) or any(work.iterdir())
    ):
        time.sleep(0.05)
    assert _state(keeper_pid) in ("gone", "Z")  # the warm parent or janitor ended too
    assert left() == []  # PID 1 of each run died with its job
    assert list(work.iterdir()) == []  # run work dirs and the fixed root, removed


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return "gone"


def test_score_many_cli_writes_one_result_per_candidate_and_a_summary(tmp_path: Path) -> None:
    twin = tmp_path / "twin"
    twin.mkdir()
    (twin / "honest_memo.py").write_text((TASK / "candidates" / "honest_memo.py").read_text())
    candidates = [*map(str, CANDIDATES), str(twin / "honest_memo.py")]
    done = subprocess.run(
        [
            sys.executable, "-m", "pytest_scorewright.cli", "score-many", *candidates,
            "--tests", str(TASK / "tests"), "--heldout", str(TASK / "heldout"),
            "--reference", str(TASK / "reference"), "--out-dir", str(tmp_path / "out"), "-j", "2",
        ],
        capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    written = sorted(p.name for p in (tmp_path / "out").iterdir())
    # Two candidates named alike: the directories that tell them apart name their results.
    plain = [f"{Path(c).stem}.json" for c in CANDIDATES if Path(c).stem != "honest_memo"]
    twins = ["candidates-honest_memo.json", "twin-honest_memo.json"]
    assert written == sorted([*plain, *twins])
    assert "\r" not in done.stderr  # no progress line when stderr is not a terminal
    # A progress line every PROGRESS_EVERY_S when stderr is not a terminal (a loaded machine
    # can take that long: once beside two CPU-bound jobs at -n 6); then the table.
    progress = re.compile(r"scorewright: \d+/\d+ scored, ")
    lines = [line for line in done.stderr.splitlines() if not progress.match(line)]
    # A table, one line a candidate, best first; the names explained; the counts.
    assert lines[0].split() == ["candidate", "passed", "held-out", "fitness", "flags"]
    rows = lines[1 : 1 + len(candidates)]
    assert sorted(row.split()[0] for row in rows) == sorted([*plain, *twins])
    fitness = [float(row.split()[3]) for row in rows]
    assert fitness == sorted(fitness, reverse=True), rows
    assert "scorewright: named by the directories that tell them apart:" in lines
    assert f"  twin-honest_memo.json <- {twin / 'honest_memo.py'}" in lines
    assert lines[-1].startswith(f"scorewright: scored {len(candidates)} candidates in ")


def _executor_scores(executor: object) -> dict[int, float | None]:
    with Evaluator(TASK / "tests", heldout=TASK / "heldout", reference=TASK / "reference") as ev:
        return {
            i: r.signal("pass_rate")
            for i, r in ev.score_many(CANDIDATES, executor=executor)  # type: ignore[arg-type]
        }


def test_score_many_through_a_process_pool_executor() -> None:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        scores = _executor_scores(pool)
    assert sorted(scores) == list(range(len(CANDIDATES)))
    assert scores[0] == 1.0  # honest_memo


def test_work_dirs_of_a_caller_killed_with_every_cleaner_go_with_the_next_evaluator(
    tmp_path: Path,
) -> None:
    # A container stopped or an OOM kill takes the caller, its warm parent and its janitor at
    # once: the work dir it was making stays, a copy of the held-out tests in it. The next
    # Evaluator on the same base removes it; a live caller's work dir stays.
    base = tmp_path / "work"
    base.mkdir()
    made = subprocess.run(
        [
            sys.executable, "-c",
            "import os, signal, sys\n"
            "from pathlib import Path\n"
            "from pytest_scorewright.sandbox.workspace import Workspace\n"
            "ws = Workspace.create(Path(sys.argv[1]), 'solution', Path(sys.argv[2]), "
            "base=Path(sys.argv[3]))\n"
            "print(ws.root, flush=True)\n"
            "os.kill(os.getpid(), signal.SIGKILL)\n",
            str(TASK / "reference" / "solution.py"), str(TASK / "heldout"), str(base),
        ],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert made.returncode == -signal.SIGKILL, made.stderr
    left = Path(made.stdout.strip())
    assert any(left.joinpath("tests").iterdir())  # the held-out tests' copy, left behind
    from pytest_scorewright.sandbox.workspace import Workspace

    mine = Workspace.create(TASK / "reference" / "solution.py", "solution", TASK / "tests", base)
    try:
        with Evaluator(TASK / "tests", reference=TASK / "reference", workdir=base) as ev:
            ev.prepare()
            assert not left.exists()
            assert mine.root.exists()  # its owner (this process) is alive
    finally:
        mine.remove()


def _table() -> list[str]:
    """Every process's pid, parent, state, uids and command line, for a failure's message."""
    rows = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            status = Path(f"/proc/{entry}/status").read_text()
            command = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
        rows.append(
            f"{entry} ppid={fields.get('PPid')} {fields.get('State', '')[:1]} "
            f"uid={fields.get('Uid', '').split()[:2]} {command[:80]!r}"
        )
    return rows


def _still_there(top: Path) -> list[Path]:
    """Everything under ``top``, as a walk finds it while runs come and go: a directory
    removed meanwhile (a run that ended) is left out, not an error."""
    found: list[Path] = []
    for root, dirs, files in os.walk(top, onerror=lambda error: None):
        found += [Path(root, name) for name in (*dirs, *files)]
    return found


def _others_read(path: Path, top: Path) -> bool:
    """Whether a user who is neither owner nor in the group could read ``path``: its own
    mode lets others read it and every directory below ``top`` on the way lets them pass. A
    run's work dir is made 0700 and given to the run's group before anything in it is opened
    up, so a copy with o+r inside it is read by nobody else whatever its own bits (under load
    this check once caught copies in that moment, the work dir still closed)."""
    try:
        if not path.stat().st_mode & 0o004:
            return False
        on_the_way = [d for d in path.parents if top in d.parents]
        return all(d.stat().st_mode & 0o001 for d in on_the_way)
    except FileNotFoundError:  # removed under the check: nobody reads it any more
        return False


def test_every_dir_of_ours_names_its_owner_and_a_dead_owners_are_swept(tmp_path: Path) -> None:
    # The candidate's source (score_source), a fixed mount point and a run's work dir alike:
    # killed with every cleaner, a caller leaves them to the next Evaluator's sweep.
    from pytest_scorewright.sandbox import leftovers
    from pytest_scorewright.sandbox.workspace import OWNER_FILE
    from pytest_scorewright.scoring.candidates import source_file

    with source_file("x = 1\n", "solution") as path:
        assert (path.parent / OWNER_FILE).read_text().split()[0] == str(os.getpid())
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    left = tmp_path / "scorewright-source-left"
    left.mkdir()
    (left / "solution.py").write_text("x = 1\n")
    (left / OWNER_FILE).write_text(f"{dead} 1\n")
    alive = tmp_path / "scorewright-source-alive"
    alive.mkdir()
    (alive / OWNER_FILE).write_text(f"{os.getpid()} {_ticks()}\n")
    assert leftovers.sweep(tmp_path) == [left]
    assert alive.exists()


def test_a_dir_whose_maker_died_before_naming_it_is_swept_by_its_name(tmp_path: Path) -> None:
    # A whole process group killed under load: a caller can die between making its dir and
    # writing .owner in it (CI once found two such dirs the sweep could not attribute). The
    # dir's own name says whose it is.
    from pytest_scorewright.sandbox import leftovers
    from pytest_scorewright.sandbox.workspace import OWNER_FILE, owned_tempdir

    made = subprocess.run(
        [sys.executable, "-c", "from pytest_scorewright.sandbox.workspace import owned_tempdir\n"
         f"print(owned_tempdir('scorewright-', {str(tmp_path)!r}))"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    unnamed = Path(made)
    (unnamed / OWNER_FILE).unlink()  # as if killed before it was written
    (unnamed / "tests").mkdir()
    mine = owned_tempdir("scorewright-", tmp_path)
    (mine / OWNER_FILE).unlink()  # a live owner, by its name alone
    older = tmp_path / "scorewright-abcdefgh"  # an older version's: no owner anywhere
    older.mkdir()
    assert leftovers.sweep(tmp_path) == [unnamed]
    assert mine.exists()
    assert older.exists()


def _ticks() -> int:
    from pytest_scorewright.kernel.procfs import start_ticks

    return start_ticks(os.getpid()) or 0
