"""OpenEvolve's real controller killed mid-run: nothing of scorewright's outlives it.

Runs ``benchmarks.openevolve_loop`` (OpenEvolve 0.4's controller, a scripted model, our
evaluation file) as a process group of its own, in a temp dir of its own (``TMPDIR``), and
SIGKILLs it after each of ``--at`` seconds: the controller alone (``kill -9 PID``: its forked
workers live on) and the whole group (``kill -9 -PGID``: what a job scheduler or a container
stop does). Then, up to ``--settle`` seconds later, it looks:

* in the temp dir, for any copy of a held-out test file (by content) that someone other than
  its owner can read, and for anything of ours left at all (``scorewright-*``);
* in the process table, for any process of scorewright's (the warm parent, a janitor, a
  pipeline) serving a process of the killed loop's session (it names its caller in its
  environment); also how many there were at the kill.

Exit status 1 when a copy is readable by others or a process of ours outlives the settle
time. Usage::

    .venv/bin/python -m benchmarks.openevolve_killed [--at 2.5 --at 5] [--settle 30]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HELDOUT = ROOT / "examples" / "quickstart" / "heldout"


def _heldout_texts() -> set[bytes]:
    return {p.read_bytes() for p in HELDOUT.rglob("*.py")}


def _session(sid: int) -> set[int]:
    """The pids of session ``sid`` (the loop, its workers, whatever they started there)."""
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_bytes().rsplit(b")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[3]) == sid:
                found.add(int(entry))
    return found


def _ours_serving(owners: set[int]) -> list[int]:
    """Processes of ours (a warm parent, a janitor, a pipeline) started for one of
    ``owners``: they name their caller in their environment (sandbox/owner.py)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            command = Path(f"/proc/{entry}/cmdline").read_bytes()
            environ = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        named = {
            int(v)
            for e in environ
            if e.startswith(b"SCOREWRIGHT_OWNER_PID=") and (v := e.split(b"=", 1)[1]).isdigit()
        }
        if b"pytest_scorewright" in command and named & owners:
            found.append(int(entry))
    return found


def _left_in(tmp: Path, texts: set[bytes]) -> tuple[list[str], list[str]]:
    """Copies of a held-out file readable by others, and every entry of ours left."""
    readable, ours = [], []
    # os.walk, not rglob: the warm parent may be removing the very directories looked at.
    found = [
        Path(top, name)
        for top, dirs, files in os.walk(tmp, onerror=lambda _: None)
        for name in (*dirs, *files)
    ]
    for path in found:
        try:
            info = path.lstat()
        except OSError:
            continue
        if path.name.startswith("scorewright-") and path.parent == tmp:
            ours.append(path.name)
        if stat.S_ISREG(info.st_mode) and info.st_size < 1 << 20:
            try:
                same = path.read_bytes() in texts
            except OSError:
                continue
            if same and _readable_by_others(path, tmp):
                readable.append(str(path.relative_to(tmp)))
    return readable, ours


def _readable_by_others(path: Path, top: Path) -> bool:
    """Another uid can read ``path``: every directory down to it lets others through, and
    the file lets them read (False for one gone meanwhile)."""
    try:
        if not path.stat().st_mode & stat.S_IROTH:
            return False
        for parent in path.parents:
            if parent == top.parent:
                return True
            if not parent.stat().st_mode & stat.S_IXOTH:
                return False
    except OSError:
        return False
    return True


def _described(tmp: Path, names: list[str]) -> str:
    """What is left, for finding out why: each entry's name, owner and ``.owner`` file."""
    if not names:
        return ""
    said = []
    for name in sorted(names)[:4]:
        path = tmp / name
        try:
            uid = path.lstat().st_uid
            owner = (path / ".owner").read_text(encoding="utf-8").strip()
        except OSError as exc:
            owner = f"no .owner ({type(exc).__name__})"
            uid = -1 if not path.exists() else path.lstat().st_uid
        said.append(f"{name} uid {uid} owner {owner!r}")
        with contextlib.suppress(OSError):
            said[-1] += f" holding {sorted(os.listdir(path))[:6]}"
    return ": " + "; ".join(said)


def one(at: float, group: bool, settle: float) -> tuple[bool, str]:
    tmp = Path(tempfile.mkdtemp(prefix="oe-killed-"))
    os.chmod(tmp, 0o755)  # noqa: S103 - a shared temp dir, as /tmp is
    out = tmp / "openevolve-out"
    env = {**os.environ, "TMPDIR": str(tmp)}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "benchmarks.openevolve_loop",
            "--iterations",
            "40",
            "--out",
            str(out),
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    time.sleep(at)
    owners = _session(proc.pid)
    served = len(_ours_serving(owners))
    if group:
        os.killpg(proc.pid, signal.SIGKILL)
    else:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + settle
    texts = _heldout_texts()
    while True:
        alive = _ours_serving(owners)
        readable, ours = _left_in(tmp, texts)
        if (not alive and not ours) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    waited = settle - max(0.0, deadline - time.monotonic())
    how = "group" if group else "alone"
    swept = ""
    if ours:
        # A whole session killed at once leaves what its cleaners had not removed yet; the
        # next Evaluator's preparation removes a dead owner's work dirs (sandbox/leftovers.py).
        from pytest_scorewright.sandbox.leftovers import sweep

        sweep(tmp)
        kept = _left_in(tmp, texts)[1]
        swept = f" ({len(kept)} after the next Evaluator's sweep{_described(tmp, kept)})"
    line = (
        f"killed {how:>5} at {at:4.1f}s ({served} of ours serving it): after {waited:4.1f}s "
        f"{len(alive)} of our processes, "
        f"{len(ours)} work dirs{swept}, {len(readable)} held-out copies readable by others"
    )
    if group:  # the loop's own workers died with it; anything left of ours is a failure
        for pid in alive:
            os.kill(pid, signal.SIGKILL)
    else:  # the controller's forked workers outlive it: end them, as a user would
        subprocess.run(["pkill", "-9", "-s", str(proc.pid)], check=False)
    shutil.rmtree(tmp, ignore_errors=True)
    return not alive and not readable, line


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--at", type=float, action="append", help="seconds into the run")
    parser.add_argument("--settle", type=float, default=30.0)
    args = parser.parse_args()
    good = True
    for at in args.at or [2.5, 5.0]:
        for group in (True, False):
            ok, line = one(at, group, args.settle)
            print(("ok   " if ok else "FAIL ") + line, flush=True)
            good = good and ok
    return 0 if good else 1


if __name__ == "__main__":
    raise SystemExit(main())
