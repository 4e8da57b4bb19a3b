"""gVisor around the runs (``Evaluator(sandbox="gvisor")``), the caller's side: one gVisor
sandbox per Evaluator holds its warm parent, so every process of every run it forks makes its
system calls to gVisor's kernel (the Sentry, a user-space kernel), not the host's: a bug in
the host kernel's system calls is no longer a way out.

One sandbox per Evaluator, not per run: a sandbox takes 0.5-1.4 s to start here and a run
0.1-0.3 s (benchmarks/gvisor_cost.py). Inside it, each run is apart from the others as far as
this gVisor lets a process be (sandbox/launch.py, child/setup/processes.py): a uid of its own
(so neither the warm parent nor another run can be signalled, traced or read), network, IPC
and UTS namespaces of its own (a loopback of its own), rlimits. gVisor (Debian's runsc
0.0~20221219) refuses bind mounts and mount propagation inside a sandbox, its mount namespaces
are not apart, and it has no Landlock, so a run's view of files is the sandbox's, which is
made here as the namespace backend makes each run's: the system directories read-only, the
interpreter bound back read-only, every other top-level directory of the host hidden (the
suites, the reference, other users' files), /tmp and /dev/shm empty and read-only, and the
Evaluator's own work directory base, where each run's work dir is its uid's alone.
docs/sandbox.md sets the two backends side by side, and says what a candidate apart can read
here that it cannot there.

Needs root (runsc starts sandboxes as root here) and runsc installed; else a one-line
ConfigError naming the fix.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_scorewright.errors import ConfigError
from pytest_scorewright.sandbox import uids
from pytest_scorewright.sandbox.host import Features
from pytest_scorewright.sandbox.plan import hideable_top_dirs, masks_for, python_paths
from pytest_scorewright.sandbox.workspace import owned_tempdir

#: How to get runsc, said where it is missing.
INSTALL = (
    "install gVisor's runsc (Debian and Ubuntu: apt-get install runsc; elsewhere "
    "https://gvisor.dev/docs/user_guide/install/)"
)
#: The sandbox's first process (warm/gvisor_init.py): it starts the warm parent and reaps.
INIT = "pytest_scorewright.warm.gvisor_init"
#: What the warm parent may do as root inside the sandbox: give runs their uids and files,
#: signal and sweep them, set their limits, make their namespaces and mounts.
CAPABILITIES = (
    "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER", "CAP_FSETID",
    "CAP_KILL", "CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP", "CAP_SYS_RESOURCE", "CAP_SYS_ADMIN",
    "CAP_NET_ADMIN",
)  # fmt: skip
#: Scratch directories, empty and read-only in the sandbox: this gVisor cannot give each run
#: one of its own (its mount namespaces are not apart), and one shared by the runs would be
#: a channel between candidates. A run's TMPDIR is its private home.
SCRATCH = ("/tmp", "/dev/shm")  # noqa: S108 - fresh tmpfs mounts, not host paths
#: Where the work dirs go by default: not under /tmp, which is empty and read-only inside.
VAR_TMP = "/var/tmp"  # noqa: S108 - a directory of our own is made in it (mkdtemp)
#: Why the runs inside have no namespaces of the run planner's kind (said in each result).
WHY_NO_NAMESPACES = "inside gVisor, which refuses the bind mounts a run's own view needs"


def runsc() -> str:
    """runsc's path, where gVisor can be used here; else a one-line ConfigError."""
    found = shutil.which("runsc")
    if found is None:
        raise ConfigError(f"sandbox='gvisor' needs gVisor's runsc, not installed here: {INSTALL}")
    if os.geteuid() != 0:
        raise ConfigError(
            "sandbox='gvisor' needs root here: runsc starts its sandboxes as root (rootless "
            "runsc cannot give each run a uid of its own); run as root, or use the default "
            "sandbox='namespaces'"
        )
    return found


def features() -> Features:
    """What the runs inside the sandbox have (the host's probe would say what the host has)."""
    return Features(
        namespaces_unavailable=WHY_NO_NAMESPACES,
        landlock_abi=0,  # gVisor has no Landlock
        root=True,
        root_uids=(uids.UID_BASE, uids.ROOT_SPAN),
    )


class GvisorSandbox:
    """One gVisor sandbox: its OCI bundle and state (in a directory of root's alone), the
    work directory base it shares with the host, and its name."""

    def __init__(self, trusted: Sequence[Path], workdir: str | None) -> None:
        self.runsc = runsc()
        # Its bundle and state (root's alone), where the caller keeps its work dirs.
        # Both removed by a later Evaluator if we die (their names and .owner say whose).
        self.home = owned_tempdir("scorewright-gvisor-", workdir)
        base = workdir or (VAR_TMP if os.path.isdir(VAR_TMP) else str(self.home))
        self.workdir = owned_tempdir("scorewright-gvisor-work-", base)
        os.chmod(self.workdir, 0o711)  # noqa: S103 - runs' uids pass to their own dirs only
        self._names: list[str] = []  # one per start: a warm parent that died is started anew
        self._trusted = [p.resolve() for p in trusted]

    def command(self, inner: Sequence[str], env: Mapping[str, str]) -> list[str]:
        """The command that runs ``inner`` (the warm parent) as the sandbox's one program."""
        bundle = self.home / "bundle"
        bundle.mkdir(exist_ok=True)
        spec = self._spec([sys.executable, "-m", INIT, *inner], env)
        (bundle / "config.json").write_text(json.dumps(spec, indent=1), encoding="utf-8")
        self._names.append(f"scorewright-{secrets.token_hex(6)}")
        return [
            self.runsc, "--network=none", "--root", str(self.home / "state"),
            "run", "--bundle", str(bundle), self._names[-1],
        ]  # fmt: skip

    def close(self) -> None:
        """The sandboxes ended (each ends with its warm parent), state and bundle removed."""
        for name in self._names:
            subprocess.run(  # noqa: S603 - runsc, found at start; our own names
                [self.runsc, "--root", str(self.home / "state"), "delete", "--force", name],
                capture_output=True,
                check=False,
                timeout=60,
            )
        shutil.rmtree(self.home, ignore_errors=True)
        shutil.rmtree(self.workdir, ignore_errors=True)

    def _spec(self, args: Sequence[str], env: Mapping[str, str]) -> dict[str, Any]:
        caps = list(CAPABILITIES)
        return {
            "ociVersion": "1.0.0",
            "process": {
                "terminal": False,
                "user": {"uid": 0, "gid": 0},
                "args": list(args),
                # Its own temporary files in the work base: /tmp is read-only in here.
                "env": [f"{k}={v}" for k, v in {**env, "TMPDIR": str(self.workdir)}.items()],
                "cwd": "/",
                "capabilities": {"bounding": caps, "effective": caps, "permitted": caps},
            },
            "root": {"path": "/", "readonly": True},
            "hostname": "scorewright",
            "mounts": self._mounts(),
            "linux": {
                "namespaces": [{"type": t} for t in ("pid", "network", "ipc", "uts", "mount")]
            },
        }

    def _mounts(self) -> list[dict[str, Any]]:
        """The sandbox's view: the host's system directories (the read-only root), every
        other top-level directory hidden under an empty tmpfs with the interpreter's
        directories bound back read-only, and the work directory base read-write."""
        readable = [
            p
            for p in python_paths()
            if not any(_overlaps(Path(p).resolve(), t) for t in self._trusted)
        ]
        keep = sorted({os.path.realpath(p) for p in readable})
        mounts: list[dict[str, Any]] = [
            {"destination": "/proc", "type": "proc", "source": "proc"},
            *(_tmpfs(d, "755", read_only=True) for d in SCRATCH),
        ]
        hidden = [d for d in hideable_top_dirs() if d not in (*SCRATCH, "/proc", "/dev")]
        # Directories an unprivileged uid could not pass on the way to the interpreter (pyenv
        # under /root): hidden too, the interpreter bound back, so a run's uid reaches it.
        deeper = [m.directory for m in masks_for(keep)]
        for directory in sorted({*hidden, *deeper}):
            mounts.append(_tmpfs(directory, read_only=True))  # nothing written there
        for path in _outermost(keep):  # a venv or a checkout under /tmp too (CI's clone)
            if any(_under(path, d) for d in (*SCRATCH, *hidden, *deeper)):
                mounts.append(_bind(path, writable=False))
        mounts.append(_bind(str(self.workdir), writable=True))
        return mounts


def _tmpfs(directory: str, mode: str = "755", *, read_only: bool = False) -> dict[str, Any]:
    options = [f"mode={mode}", *(["ro"] if read_only else [])]
    return {"destination": directory, "type": "tmpfs", "source": "tmpfs", "options": options}


def _bind(path: str, *, writable: bool) -> dict[str, Any]:
    mode = "rw" if writable else "ro"
    return {"destination": path, "type": "bind", "source": path, "options": ["rbind", mode]}


def _overlaps(a: Path, b: Path) -> bool:
    return a == b or a in b.parents or b in a.parents


def _under(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def _outermost(paths: Sequence[str]) -> list[str]:
    kept: list[str] = []
    for path in sorted(paths):
        if not any(_under(path, k) for k in kept):
            kept.append(path)
    return kept
