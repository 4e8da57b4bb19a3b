"""``Evaluator(sandbox="gvisor")`` (sandbox/gvisor.py): every run inside a real gVisor sandbox
(Debian's runsc), attacked from inside it, and scored as the namespace backend scores it.

Skipped, saying why, where runsc is not installed (.ci/run installs it) or this is not root
(runsc starts sandboxes as root here); the refusals themselves are tested everywhere."""

from __future__ import annotations

import os
import shutil
import socket
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_scorewright.errors import ConfigError
from pytest_scorewright.evaluator import Evaluator
from pytest_scorewright.result import ScoreResult
from tests.corpus import ROOT as CORPUS
from tests.corpus import cases

pytestmark = pytest.mark.sandbox

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart"
NUMBERS = CORPUS / "numbers"
CAN_RUN = shutil.which("runsc") is not None and os.geteuid() == 0
needs_gvisor = pytest.mark.skipif(
    not CAN_RUN,
    reason="needs root and gVisor's runsc (apt-get install runsc; .ci/run installs it)",
)


def test_without_runsc_or_root_the_backend_is_refused_in_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no runsc on it
    with pytest.raises(ConfigError, match="apt-get install runsc") as missing:
        Evaluator(QUICKSTART / "tests", sandbox="gvisor").prepare()
    assert "\n" not in str(missing.value)
    with pytest.raises(ConfigError, match="sandbox 'vm' is not one of namespaces, gvisor"):
        Evaluator(QUICKSTART / "tests", sandbox="vm")
    with pytest.raises(ConfigError, match="drop warm"):
        Evaluator(QUICKSTART / "tests", sandbox="gvisor", warm=False)


def test_the_kernel_boundary_is_required_only_by_name_and_refused_without_gvisor() -> None:
    with pytest.raises(ConfigError, match=r"kernel \(a run's system calls reach gVisor"):
        Evaluator(QUICKSTART / "tests", require_isolation=["kernel"]).prepare()


@pytest.fixture(scope="module")
def quickstart() -> Iterator[Evaluator]:
    if not CAN_RUN:
        pytest.skip("needs root and gVisor's runsc (apt-get install runsc)")
    with Evaluator(
        QUICKSTART / "tests",
        heldout=QUICKSTART / "heldout",
        reference=QUICKSTART / "reference",
        sandbox="gvisor",
        require_isolation=True,
    ) as made:
        yield made


@needs_gvisor
def test_the_quickstart_scores_as_under_namespaces_and_every_guarantee_holds(
    quickstart: Evaluator,
) -> None:
    with Evaluator(
        QUICKSTART / "tests", heldout=QUICKSTART / "heldout", reference=QUICKSTART / "reference"
    ) as plain:
        for candidate in (QUICKSTART / "solution.py", QUICKSTART / "reference" / "solution.py"):
            ours, theirs = quickstart.score(candidate), plain.score(candidate)
            assert _verdict(ours) == _verdict(theirs)
    assert ours.limits is not None
    sandbox = ours.limits["sandbox"]
    assert sandbox["processes"] == "gvisor"
    assert sandbox["not_held"] == {}
    assert "kernel" in sandbox["guarantees"]
    assert sandbox["run_uid"].startswith("its own")


#: A candidate that attacks from inside the sandbox: each function tries one thing and says
#: what it got; the task's tests assert it got nothing.
ATTACKER = textwrap.dedent(
    """
    import os, socket, subprocess, time

    def read(path):
        try:
            with open(path) as handle:
                return handle.read()
        except OSError as exc:
            return type(exc).__name__

    def listing(path):
        try:
            return sorted(os.listdir(path))
        except OSError as exc:
            return type(exc).__name__

    def write(path):
        try:
            with open(path, "w") as handle:
                handle.write("planted")
            return "written"
        except OSError as exc:
            return type(exc).__name__

    def connect(port):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=2).close()
            return "connected"
        except OSError as exc:
            return type(exc).__name__

    def outside(host, port):
        try:
            socket.create_connection((host, port), timeout=2).close()
            return "connected"
        except OSError as exc:
            return type(exc).__name__

    def kernel():
        return os.uname().release

    def unix(path):
        try:
            with socket.socket(socket.AF_UNIX) as sock:
                sock.connect(path)
            return "connected"
        except OSError as exc:
            return type(exc).__name__

    def signal_parent():
        try:
            os.kill(1, 9)
            return "killed"
        except OSError as exc:
            return type(exc).__name__

    def daemon():
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                time.sleep(600)
            os._exit(0)
        return "left"
    """
)


@pytest.fixture(scope="module")
def attack_task(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, str]]]:
    """A task whose tests assert an attacker got nothing, what it attacks given by env."""
    if not CAN_RUN:
        pytest.skip("needs root and gVisor's runsc (apt-get install runsc)")
    root = tmp_path_factory.mktemp("attack")
    (root / "tests").mkdir()
    (root / "secret").mkdir()
    (root / "secret" / "heldout_test.py").write_text("ANSWER = 42\n")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    unix_path = root / "host.sock"
    host_unix = socket.socket(socket.AF_UNIX)
    host_unix.bind(str(unix_path))
    host_unix.listen()
    os.chmod(root, 0o755)  # noqa: S103 - others may pass: only the view may stop them
    os.chmod(unix_path, 0o777)  # noqa: S103 - anyone may connect: only gVisor may stop it
    env = {
        "SECRET": str(root / "secret" / "heldout_test.py"),
        "PORT": str(listener.getsockname()[1]),
        "HOST_KERNEL": os.uname().release,
        "UNIX": str(unix_path),
    }
    (root / "tests" / "test_attacks.py").write_text(
        textwrap.dedent(
            """
            import os
            import solution

            def test_the_host_files_outside_the_view_are_not_there():
                assert solution.read(os.environ["SECRET"]) == "FileNotFoundError"
                assert solution.listing("/root") in ([], [".pyenv"], "PermissionError")
                assert solution.read("/etc/shadow") in ("PermissionError", "FileNotFoundError")

            def test_nothing_is_written_outside_the_work_dir():
                for path in ("/etc/planted", "/tmp/planted", "/var/tmp/planted", "/planted"):
                    assert solution.write(path) != "written", path

            def test_no_network_and_no_host_listener():
                assert solution.connect(int(os.environ["PORT"])) != "connected"
                assert solution.outside("1.1.1.1", 53) != "connected"
                assert solution.unix(os.environ["UNIX"]) != "connected"

            def test_the_system_calls_reach_gvisors_kernel_not_the_hosts():
                assert solution.kernel() != os.environ["HOST_KERNEL"]

            def test_the_trusted_processes_cannot_be_signalled():
                assert solution.signal_parent() != "killed"

            def test_a_daemon_is_left_behind():
                assert solution.daemon() == "left"
            """
        )
    )
    (root / "solution.py").write_text(ATTACKER)
    try:
        yield root, env
    finally:
        listener.close()
        host_unix.close()


@needs_gvisor
def test_attacks_from_inside_gvisor_get_nothing_and_leave_nothing(
    attack_task: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    root, env = attack_task
    with Evaluator(
        root / "tests",
        sandbox="gvisor",
        env=env,
        isolation="in-process",
        dedupe=False,
        workdir=tmp_path,
    ) as evaluator:
        first = evaluator.score(root / "solution.py")
        assert list(tmp_path.glob("scorewright-gvisor-work-*"))  # its work dirs' base
        again = evaluator.score(root / "solution.py")
    for result in (first, again):
        # Each attack test passes when the attack got nothing (the candidate's credit is
        # another matter: a daemon left behind is evidence against it).
        failed = {t.nodeid: t.message for t in result.tests if t.outcome != "passed"}
        assert failed == {}, failed
        assert len(result.tests) == 6
    # The daemon each run left is gone with the sandbox, and the work dirs with their base.
    assert list(tmp_path.iterdir()) == []


@needs_gvisor
def test_a_hang_and_a_fork_bomb_are_ended_inside_gvisor(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_stop.py").write_text(
        "import solution\n\ndef test_bomb():\n    solution.bomb()\n\n"
        "def test_hang():\n    solution.hang()\n"
    )
    (tmp_path / "solution.py").write_text(
        "import os\n\ndef bomb():\n    while True:\n        try:\n            os.fork()\n"
        "        except OSError:\n            pass\n\n"
        "def hang():\n    while True:\n        pass\n"
    )
    from pytest_scorewright.limits import Limits

    limits = Limits(timeout_s=8, processes=32)
    with Evaluator(tmp_path / "tests", sandbox="gvisor", limits=limits) as evaluator:
        result = evaluator.score(tmp_path / "solution.py")
    assert (result.signal("duration_s") or 99.0) < 30
    assert result.signal("pass_rate") == 0.0
    assert result.limits is not None
    assert result.limits["sandbox"]["nproc_enforced"] is True


#: The gaming candidates scored under both backends here (every honest one is too): those whose
#: trick meets the sandbox (reading or editing the tests, killing, exiting, a conftest) and two
#: the integrity layer alone stops (the whole corpus takes a minute more under load).
SIDE_BY_SIDE = {
    "gaming_a3_edit_tests", "gaming_a5_conftest", "gaming_a7_read_tests", "gaming_b1_always_equal",
    "gaming_d1_os_exit", "gaming_d8_kill", "gaming_d4_patch_reports",
}  # fmt: skip


@needs_gvisor
@pytest.mark.slow
def test_the_numbers_corpus_scores_as_under_namespaces_candidate_for_candidate() -> None:
    found: dict[str, dict[str, ScoreResult]] = {}
    for backend in ("namespaces", "gvisor"):
        with Evaluator(
            NUMBERS / "tests",
            heldout=NUMBERS / "heldout",
            reference=NUMBERS / "reference",
            sandbox=backend,
            dedupe=False,
        ) as evaluator:
            found[backend] = {
                case.path.stem: evaluator.score(case.path)
                for case in cases(NUMBERS)
                if case.honest or case.path.stem in SIDE_BY_SIDE
            }
    for name, plain in found["namespaces"].items():
        boxed = found["gvisor"][name]
        if name.startswith("honest") or not plain.integrity.rejected:
            # A slow test (honest_slow's naive fib(30)) may time out on one side only: its
            # wall limit is stretched by the time it waited for a CPU under namespaces, not
            # under gVisor, whose /proc does not say.
            one_sided = frozenset(_timed_out(boxed) ^ _timed_out(plain))
            assert _verdict(boxed, one_sided) == _verdict(plain, one_sided), name
        else:
            # Rejected by both, with nothing credited. Its evidence may differ: a candidate
            # apart reads its run's tests in gVisor (limits.sandbox.candidate_sees_tests),
            # which a mount namespace keeps from it under the namespace backend.
            assert boxed.integrity.rejected, name
            assert _verdict(boxed)[:2] == _verdict(plain)[:2] == (0.0, 0.0), name
    assert found["gvisor"]["gaming_a7_read_tests"].limits is not None
    sandbox = found["gvisor"]["gaming_a7_read_tests"].limits["sandbox"]
    assert "its own run's copies of the tests" in sandbox["candidate_sees_tests"]


def _timed_out(result: ScoreResult) -> set[str]:
    return {t.nodeid for t in result.tests if t.outcome == "timeout"}


def _verdict(result: ScoreResult, leave_out: frozenset[str] = frozenset()) -> tuple[object, ...]:
    """What a verdict is made of: pass rates, rejection, the codes, each test's outcome (less
    the tests ``leave_out`` names, and then the rates they move)."""
    return (
        None if leave_out else result.signal("pass_rate"),
        None if leave_out else result.signal("heldout_pass_rate"),
        result.integrity.rejected,
        tuple(sorted({r.code for r in result.integrity.reasons if r.severity != "hint"})),
        tuple(sorted((t.nodeid, t.outcome) for t in result.tests if t.nodeid not in leave_out)),
    )


@needs_gvisor
@pytest.mark.slow
def test_a_caller_killed_with_its_group_leaves_no_sandbox_and_its_dirs_are_swept(
    tmp_path: Path,
) -> None:
    import signal
    import subprocess
    import sys
    import time

    from pytest_scorewright.sandbox import leftovers

    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_hang.py").write_text(
        "import solution\n\ndef test_hang():\n    solution.hang()\n"
    )
    (tmp_path / "solution.py").write_text("def hang():\n    while True:\n        pass\n")
    script = (
        "import sys\n"
        "from pytest_scorewright.evaluator import Evaluator\n"
        f"ev = Evaluator({str(tmp_path / 'tests')!r}, sandbox='gvisor',"
        f" workdir={str(tmp_path)!r})\n"
        "ev.prepare()\n"
        "print('ready', flush=True)\n"
        f"ev.score({str(tmp_path / 'solution.py')!r})\n"
    )
    caller = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    assert caller.stdout is not None
    assert caller.stdout.readline().strip() == "ready"
    time.sleep(2.0)  # the hang is under way inside the sandbox
    os.killpg(caller.pid, signal.SIGKILL)
    caller.wait()
    # Its warm parent sees its requests end, ends the runs and exits; so does the sandbox.
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and _sandboxes_of(tmp_path):
        time.sleep(0.5)
    assert _sandboxes_of(tmp_path) == []
    bases = list(tmp_path.glob("scorewright-gvisor-work-*"))
    assert all(not any(b.glob("scorewright-*")) for b in bases)  # no run's work dir left
    # The next Evaluator (here, its sweep) removes what the dead caller left.
    leftovers.sweep(tmp_path)
    assert list(tmp_path.glob("scorewright-gvisor*")) == []


def _sandboxes_of(where: Path) -> list[str]:
    """runsc processes serving a sandbox whose work base is under ``where``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                command = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ")
            except OSError:
                continue
            if b"runsc" in command and str(where).encode() in command:
                found.append(command.decode(errors="replace"))
    return found
