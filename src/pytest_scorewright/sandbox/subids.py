"""Subordinate ids: an ordinary user's runs each get a uid of their own, as root's runs do.

This is rootless podman's route. ``/etc/subuid`` and ``/etc/subgid`` give the user a range of
ids, and the setuid helpers ``newuidmap`` and ``newgidmap`` (package ``uidmap`` on Debian,
``shadow-utils`` elsewhere) map that range into a user namespace the user made. Once per
process that starts runs (the warm parent, or an Evaluator without one), a *keeper* process
enters a new user namespace U and the helpers map, in U::

    0        -> the caller's uid and gid
    1 .. N   -> the subordinate range (N ids)

Every run then joins U (``setns``, about 0.2 ms: a run pays nothing else for this), where it
is root, makes its PID, mount, network, IPC and UTS namespaces, and its worker changes to a
uid ``k`` in 1..N of its own: on the host, ``start + k - 1``, which no other process has.
RLIMIT_NPROC then counts that run alone, a run can signal neither the trusted processes
(uid 0 in U, the caller outside) nor another run, and the uid sweep finds its processes as
it does root's.

The keeper stays, as caretaker: files a run writes belong to its uid, which the caller
cannot remove from outside. A run's job hands them back (chown to 0 in U) when it ends;
where it could not (it was killed), the keeper removes them (:func:`remove_left`).

Where there is no range, no helper, or no passwd entry for the caller (newuidmap needs one),
runs map only the caller's own uid (kernel/namespaces.py) and the result says which guarantees
that loses (sandbox/guarantees.py).
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import threading
from dataclasses import dataclass

from pytest_scorewright.sandbox import uids

#: Where the setuid helpers are looked for (not the caller's PATH: a helper of the same name
#: earlier on it would be handed the caller's namespace to map).
HELPER_PATH = "/usr/bin:/bin:/usr/sbin:/sbin:/usr/local/bin"
SUBUID, SUBGID = "/etc/subuid", "/etc/subgid"

#: The keeper, run as ``python -I -S -c``: enter a user namespace, say so, then (once mapped)
#: remove the work dirs it is asked to, one JSON path per line, until its stdin closes. Only a
#: directory named ``scorewright-*`` that the caller owns (uid 0 in U) is removed.
_KEEPER = """
import ctypes, json, os, shutil, stat, sys
libc = ctypes.CDLL(None, use_errno=True)
def say(obj):
    sys.stdout.write(json.dumps(obj) + "\\n")
    sys.stdout.flush()
if libc.unshare(0x10000000) != 0:
    say({"error": "unshare: " + os.strerror(ctypes.get_errno())})
    sys.exit(0)
say({"ready": True})
for line in sys.stdin:
    path = json.loads(line)
    try:
        st = os.lstat(path)
        if (os.path.basename(path).startswith("scorewright-") and stat.S_ISDIR(st.st_mode)
                and st.st_uid == 0):
            shutil.rmtree(path, ignore_errors=True)
    except OSError:
        pass
    say({"removed": not os.path.lexists(path)})
"""


class Unavailable(RuntimeError):
    """The subordinate-id route cannot be used here (the message says why)."""


@dataclass(frozen=True)
class SubIds:
    """The caller's subordinate ranges (the first of each file that has one)."""

    user: str
    uid_start: int
    gid_start: int
    #: Ids mapped: the smaller of the two ranges.
    count: int
    newuidmap: str
    newgidmap: str

    def run_uid(self, serial: int) -> int:
        """The uid (in U) of this process's ``serial``-th run."""
        return uids.pick(1, self.count, os.getpid(), serial)

    def block(self, pid: int) -> tuple[int, int]:
        """The uids (in U: first, how many) of the runs planned by process ``pid``."""
        return uids.block(1, self.count, pid)

    def host_uid(self, uid: int) -> int:
        """The host's uid for ``uid`` in U (1..count)."""
        return self.uid_start + uid - 1

    def describe(self) -> str:
        return f"{self.count} subordinate ids of {self.user} from {self.uid_start}"


def find(uid: int | None = None) -> SubIds:
    """The subordinate ranges of ``uid`` (the caller's) and the helpers; Unavailable says
    why there are none."""
    uid = os.getuid() if uid is None else uid
    try:
        name = pwd.getpwuid(uid).pw_name
    except KeyError:
        raise Unavailable(f"uid {uid} has no passwd entry, which newuidmap needs") from None
    helpers = []
    for helper in ("newuidmap", "newgidmap"):
        found = shutil.which(helper, path=HELPER_PATH)
        if found is None:
            raise Unavailable(f"{helper} is not installed (package uidmap or shadow-utils)")
        helpers.append(found)
    uids = _first_range(SUBUID, name, uid)
    gids = _first_range(SUBGID, name, uid)
    count = min(uids[1], gids[1])
    return SubIds(name, uids[0], gids[0], count, helpers[0], helpers[1])


def _first_range(path: str, name: str, uid: int) -> tuple[int, int]:
    try:
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except OSError as exc:
        raise Unavailable(f"{path}: {exc.strerror}") from None
    for line in lines:
        fields = line.strip().split(":")
        if len(fields) != 3 or fields[0] not in (name, str(uid)):
            continue
        try:
            start, count = int(fields[1]), int(fields[2])
        except ValueError:
            continue
        if start > 0 and count >= 1:
            return start, count
    raise Unavailable(f"{path} has no range for {name} (usermod --add-subuids, as root)")


class Keeper:
    """The process that holds U, mapped; ``fd`` is U's namespace file (runs ``setns`` it)."""

    def __init__(self, ids: SubIds) -> None:
        self.ids = ids
        self._lock = threading.Lock()
        self._proc = subprocess.Popen(  # noqa: S603 - our interpreter, our code, no shell
            [sys.executable, "-I", "-S", "-c", _KEEPER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={},
            cwd="/",
            start_new_session=True,  # a terminal's ^C is for the caller, who closes it
        )
        try:
            said = self._read()
            if "error" in said:
                raise Unavailable(f"the keeper's user namespace: {said['error']}")
            pid = self._proc.pid
            self._map(ids.newuidmap, pid, os.getuid(), ids.uid_start)
            self._map(ids.newgidmap, pid, os.getgid(), ids.gid_start)
            self.fd = os.open(f"/proc/{pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
        except BaseException:
            self.close()
            raise

    def _map(self, helper: str, pid: int, own: int, start: int) -> None:
        done = subprocess.run(  # noqa: S603 - a fixed helper, found on HELPER_PATH
            [helper, str(pid), "0", str(own), "1", "1", str(start), str(self.ids.count)],
            capture_output=True,
            text=True,
            check=False,
            env={"PATH": HELPER_PATH, "LC_ALL": "C"},
        )
        if done.returncode != 0:
            said = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
            raise Unavailable(f"{os.path.basename(helper)}: {said}")

    def _read(self) -> dict[str, object]:
        out = self._proc.stdout
        line = out.readline() if out is not None else b""
        if not line:
            raise Unavailable("the keeper process ended before it answered")
        answer = json.loads(line)
        return answer if isinstance(answer, dict) else {}

    def remove(self, path: str) -> bool:
        """Remove a work dir the caller could not (its runs' files belong to their uids)."""
        with self._lock:
            stdin = self._proc.stdin
            if stdin is None or self._proc.poll() is not None:
                return False
            try:
                stdin.write((json.dumps(path) + "\n").encode())
                stdin.flush()
                return bool(self._read().get("removed"))
            except (OSError, ValueError, Unavailable):
                return False

    def close(self) -> None:
        with self._lock:
            if self._proc.stdin is not None:
                self._proc.stdin.close()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            if self._proc.stdout is not None:
                self._proc.stdout.close()
            if getattr(self, "fd", None) is not None:
                os.close(self.fd)
                self.fd = -1


_keeper: Keeper | None = None
_keeper_pid = 0
_made = threading.Lock()


def keeper(ids: SubIds | None = None) -> Keeper:
    """This process's keeper, made on first use (from ``ids``, or the caller's ranges). A
    forked child makes its own: its parent's pipes are not its to talk on."""
    global _keeper, _keeper_pid
    with _made:
        if _keeper is None or _keeper.fd < 0 or _keeper_pid != os.getpid():
            _keeper, _keeper_pid = Keeper(ids or find()), os.getpid()
        return _keeper


def current() -> Keeper | None:
    """The keeper whose namespace this process's runs join: its own, or (in a forked job)
    its parent's, whose namespace file it inherited; never makes one."""
    return _keeper if _keeper is not None and _keeper.fd >= 0 else None


def existing() -> Keeper | None:
    """This process's keeper, if it made one (never makes one)."""
    return _keeper if _keeper is not None and _keeper_pid == os.getpid() else None


def remove_left(path: str) -> bool:
    """Remove what the caller could not of a work dir, where a keeper of this process (or,
    if ``ids`` can make one, a new one) can; True when ``path`` is gone."""
    if not os.path.lexists(path):
        return True
    found = existing()
    if found is None:
        try:
            found = keeper()
        except (Unavailable, OSError):
            return False
    return found.remove(path)
