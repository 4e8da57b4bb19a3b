"""The sandbox without Linux namespaces (hosts that forbid them): what still holds."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from pytest_scorewright.evaluator import Evaluator
from pytest_scorewright.limits import Limits
from pytest_scorewright.sandbox.host import probe
from tests.conftest import boot_clock, sandbox_processes

pytestmark = pytest.mark.sandbox  # every test here forks real sandboxes

TESTS = "from solution import add\n\ndef test_small():\n    assert add(1, 2) == 3\n"
MARKER = "sw-orphan-7q"


def _marker(tag: str) -> str:
    """A daemon's name (PR_SET_NAME, 15 bytes at most) no other test sees: the modes matrix
    runs this module in several sessions at once (tests/sandbox/test_sandbox_modes.py), and
    a name they shared once read one test's daemon, mid-run, as another's left behind."""
    return f"sw{tag}{os.getpid()}"


@pytest.fixture(scope="module")
def evaluator(tmp_path_factory: pytest.TempPathFactory) -> Evaluator:
    root = tmp_path_factory.mktemp("degraded")
    (root / "tests").mkdir()
    (root / "tests" / "test_add.py").write_text(TESTS)
    (root / "ref.py").write_text("def add(a, b):\n    return a + b\n")
    return Evaluator(
        root / "tests",
        reference=root / "ref.py",
        limits=Limits(timeout_s=3, grace_s=1),
        namespaces=False,
    )


def _named_processes(name: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if Path(f"/proc/{entry}/comm").read_text().strip() == name:
                    found.append(int(entry))
            except OSError:
                continue
    return found


def _status(pid: int) -> str:
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return f"{pid}: gone"
    return " ".join(line for line in lines if line.split(":")[0] in ("State", "PPid"))


def _score(evaluator: Evaluator, tmp_path: Path, source: str) -> object:
    candidate = tmp_path / "c.py"
    candidate.write_text(textwrap.dedent(source))
    return evaluator.score(candidate)


DAEMON = f"""
    import ctypes, os, time
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            ctypes.CDLL(None).prctl(15, b"{MARKER}", 0, 0, 0)  # PR_SET_NAME
            while True:
                time.sleep(0.01)
        os._exit(0)
    def add(a, b):
        {{body}}
"""


@pytest.mark.parametrize("body", ["return a - b", "while True: pass"], ids=["exits", "hangs"])
def test_a_detached_daemon_is_killed_by_the_subreaper(
    evaluator: Evaluator, tmp_path: Path, body: str
) -> None:
    marker = _marker("h" if "while" in body else "e")
    result = _score(evaluator, tmp_path, DAEMON.replace(MARKER, marker).format(body=body))
    # Killed ones may take a moment to be reaped on a loaded machine; one left for good is not.
    deadline = time.monotonic() + 5
    while _named_processes(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = _named_processes(marker)
    assert left == [], [_status(pid) for pid in left]
    assert result.limits is not None  # type: ignore[attr-defined]
    assert result.limits["sandbox"]["processes"] == "subreaper"  # type: ignore[attr-defined]
    assert result.signal("pass_rate") == 0.0  # type: ignore[attr-defined]


def test_a_fork_bomb_tree_leaves_no_process_behind(evaluator: Evaluator, tmp_path: Path) -> None:
    # Every child forks on too (a tree, not a fan), and each waits 30 s: a sweep of the
    # subreaper's direct children alone falls behind (the red team saw ~3,000 processes
    # outlive score() as an ordinary user). The count is bounded by RLIMIT_NPROC: of the
    # run's uid, or (not root) of the caller's uid, from what it had at the start.
    if evaluator.features.root and evaluator.guarantees["process_limit"] is not None:
        pytest.skip("root without a uid of its own: nothing bounds a fork bomb here")
    since = boot_clock()
    result = _score(
        evaluator,
        tmp_path,
        """
        import os, time
        def add(a, b):
            while True:
                try:
                    os.fork()
                except OSError:
                    time.sleep(0.01)
        """,
    )
    left = sandbox_processes(os.getpid(), since)
    assert left == [], f"{len(left)} processes outlived score()"
    # The per-test limit (or, were it off, the run's deadline) ends the bomb's test.
    assert result.signal("pass_rate") == 0.0  # type: ignore[attr-defined]
    # (A forked copy of the test process may report first, as an error of the call: none
    # is a pass. Seen once, in a delegated cgroup beside four runs at a time.)
    assert result.tests[0].outcome in ("timeout", "failed", "error")  # type: ignore[attr-defined]


@pytest.mark.parametrize("killed", ["caller", "warm parent"])
def test_when_the_caller_or_its_warm_parent_is_killed_a_detached_daemon_goes_too(
    tmp_path: Path, killed: str
) -> None:
    # The warm parent sees its caller go and asks each job to end its run (a job whose warm
    # parent dies is asked by the kernel: PR_SET_PDEATHSIG); without namespaces the job then
    # sweeps what its supervisor left (it is a subreaper too), where a plain kill of the job
    # would orphan the daemon to init. Long before the run's own 60 s deadline.
    marker = _marker("cg" if killed == "caller" else "wp")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_add.py").write_text(TESTS)
    (tmp_path / "ref.py").write_text("def add(a, b):\n    return a + b\n")
    (tmp_path / "c.py").write_text(
        textwrap.dedent(DAEMON.replace(MARKER, marker).format(body="while True: pass"))
    )
    script = textwrap.dedent(
        f"""
        from pytest_scorewright.evaluator import Evaluator
        from pytest_scorewright.limits import Limits
        ev = Evaluator({str(tmp_path / "tests")!r}, reference={str(tmp_path / "ref.py")!r},
                       limits=Limits(timeout_s=60), namespaces=False)
        print(ev._runner.warm._proc.pid, flush=True)
        ev.score({str(tmp_path / "c.py")!r})
        """
    )
    caller = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert caller.stdout is not None
    try:
        warm_pid = int(caller.stdout.readline())
        deadline = time.monotonic() + 30
        while not _named_processes(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _named_processes(marker), "the daemon never started"
        os.kill(caller.pid if killed == "caller" else warm_pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while _named_processes(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        left = _named_processes(marker)
        assert left == [], [_status(pid) for pid in left]
    finally:
        # A caller whose warm parent died gets an error and removes its runs' work dirs.
        with contextlib.suppress(subprocess.TimeoutExpired):
            caller.wait(timeout=10)
        caller.kill()
        caller.wait()
        caller.stdout.close()


@pytest.mark.skipif(probe().landlock_abi < 6, reason="needs Landlock ABI 6 (signal scoping)")
def test_landlock_scoping_stops_signals_to_the_parent_without_namespaces(
    evaluator: Evaluator, tmp_path: Path
) -> None:
    result = _score(
        evaluator,
        tmp_path,
        f"""
        import os, signal
        try:
            os.kill({os.getpid()}, signal.SIGKILL)
        except OSError:
            pass
        def add(a, b):
            return a + b
        """,
    )
    assert result.ok  # type: ignore[attr-defined]


def test_the_startup_environment_of_the_parent_is_not_readable(tmp_path: Path) -> None:
    # A secret in the parent's *initial* environment (what /proc/self/environ shows in a
    # forked child), in a real subprocess started with it.
    secret = "sw-initial-env-secret-91"  # noqa: S105 - a canary
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_add.py").write_text(TESTS)
    (tmp_path / "ref.py").write_text("def add(a, b):\n    return a + b\n")
    (tmp_path / "c.py").write_text(
        textwrap.dedent(
            """
            import os, posix
            seen = []
            try:
                seen.append(open("/proc/self/environ", "rb").read().decode("latin-1"))
            except OSError as exc:
                seen.append(str(exc))
            seen.append(repr(posix.environ))
            seen.append(repr(os.environ))
            def add(a, b):
                raise AssertionError(" ".join(seen))
            """
        )
    )
    script = textwrap.dedent(
        f"""
        from pytest_scorewright.evaluator import Evaluator
        for namespaces in (False, True):
            ev = Evaluator({str(tmp_path / "tests")!r}, reference={str(tmp_path / "ref.py")!r},
                           namespaces=namespaces)
            print(ev.score({str(tmp_path / "c.py")!r}).to_json())
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        env={**os.environ, "SW_SECRET": secret},
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert secret not in done.stdout
    first = json.loads(done.stdout.split("\n}\n")[0] + "\n}")
    assert first["tests"][0]["outcome"] == "failed"  # the candidate did run and report
