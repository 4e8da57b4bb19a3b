"""Run a command as the sandbox's other hosts see it: an ordinary user, a container.

CI runs as root, yet most people score as an ordinary user, and containers refuse namespaces.
This launcher, started as root, makes one of those hosts for one command and then execs it:

- ``user``: an unprivileged uid of its own (no passwd entry needed), no groups: it has no
  subordinate ids (newuidmap needs a passwd entry), so its runs map the caller's uid alone;
- ``user-subids``: a named user with a range in /etc/subuid and /etc/subgid, as ``useradd``
  gives one where the ``uidmap`` package is installed (:func:`subid_user` makes it): its
  runs each get a uid of their own from that range (sandbox/subids.py);
- ``user-no-namespaces``: the same, where namespaces are refused (as where an AppArmor
  policy or a sysctl forbids unprivileged user namespaces);
- ``rootless-container``: root of a user namespace that maps ids 0-65535 only, as rootless
  Podman and Docker and Kubernetes pods with ``hostUsers: false`` do (here to the host's own
  0-65535): the sandbox's usual run uids (1,000,000 on) do not exist there (uids.py);
- ``userns-root-only``: root of a user namespace that maps root alone: no uid to change to;
- ``user-no-namespaces-cgroup``: as ``user-no-namespaces``, in a cgroup v2 subtree delegated
  to the uid, as systemd delegates ``user@UID.service`` (sandbox/cgroups.py);
- ``container``: root where namespaces are refused (Docker's default seccomp profile refuses
  ``unshare``, ``setns`` and ``clone`` with namespace flags, and ``clone3`` outright) and
  the cgroup file system is not writable.

Namespaces are refused by a seccomp filter installed with ``prctl`` (a small BPF program,
below), as Docker's profile does. The command also runs in a mount namespace of its own where
directories the uid could not traverse on the way to this interpreter (pyenv under /root) are
masked, as the sandbox masks them (kernel/namespaces.py), so the unprivileged uid can run it.

    python -m tests.modes user 3000123 -- python -m pytest tests/sandbox/test_sandbox_attacks.py
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import itertools
import os
import platform
import pwd
import shutil
import struct
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence

from pytest_scorewright.kernel import linux
from pytest_scorewright.kernel.namespaces import apply_mask
from pytest_scorewright.sandbox.plan import masks_for
from pytest_scorewright.sandbox.subids import HELPER_PATH

MODES = (
    "root",
    "user",
    "user-subids",
    "user-no-namespaces",
    "container",
    "rootless-container",
    "userns-root-only",
    "user-no-namespaces-cgroup",
)

#: ``user-no-namespaces-cgroup``: the cgroup (v2) the launcher moves itself into, in a
#: subtree delegated to the uid (:func:`delegated_cgroup` makes it).
CGROUP_ENV = "SCOREWRIGHT_TEST_CGROUP"
_subtrees = itertools.count()

#: The named user of ``user-subids`` and its subordinate range: far above every other uid the
#: tests and the sandbox use, and left on the machine for later sessions (it owns nothing).
SUBID_USER = "scorewright-subids"
SUBID_START, SUBID_COUNT = 200_000_000, 65536

#: An unprivileged uid of the test session's own, far above the sandbox's (uids.UID_BASE).
USER_UID_BASE = 3_000_000

_NAMESPACE_FLAGS = (
    linux.CLONE_NEWNS
    | linux.CLONE_NEWUTS
    | linux.CLONE_NEWIPC
    | linux.CLONE_NEWUSER
    | linux.CLONE_NEWPID
    | linux.CLONE_NEWNET
    | 0x02000000  # CLONE_NEWCGROUP
)
#: (audit arch, clone, unshare, setns, clone3) per machine.
_SYSCALLS = {
    "x86_64": (0xC000003E, 56, 272, 308, 435),
    "aarch64": (0xC00000B7, 220, 97, 268, 435),
}
_EPERM, _ENOSYS = 1, 38


def session_uid() -> int:
    """The unprivileged uid this test process's ordinary-user runs use."""
    return USER_UID_BASE + os.getpid() % 1_000_000


def subid_user() -> int | str:
    """The uid of :data:`SUBID_USER`, made (as root) with a subordinate range if it is not
    there yet; or why it cannot be (no ``useradd``, no ``newuidmap``)."""
    for tool in ("useradd", "usermod", "newuidmap", "newgidmap"):
        if shutil.which(tool, path=HELPER_PATH) is None:
            return f"{tool} is not installed (the uidmap and passwd packages)"
    with open("/tmp/scorewright-subids.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            uid = pwd.getpwnam(SUBID_USER).pw_uid
        except KeyError:
            _root_tool("useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", SUBID_USER)
            uid = pwd.getpwnam(SUBID_USER).pw_uid
        listed = {}
        for path in ("/etc/subuid", "/etc/subgid"):
            with contextlib.suppress(OSError), open(path) as fh:
                listed[path] = any(
                    line.split(":")[0] in (SUBID_USER, str(uid)) for line in fh.read().splitlines()
                )
        if not all(listed.get(p) for p in ("/etc/subuid", "/etc/subgid")):
            span = f"{SUBID_START}-{SUBID_START + SUBID_COUNT - 1}"
            _root_tool("usermod", "--add-subuids", span, "--add-subgids", span, SUBID_USER)
    return uid


def _root_tool(*command: str) -> None:
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)}: {done.stderr.strip()}")


def refuse_namespaces() -> None:
    """Install a seccomp filter that refuses namespaces as Docker's default profile does."""
    arch, clone, unshare, setns, clone3 = _SYSCALLS[platform.machine()]
    ld, jeq, jset, ret = 0x20, 0x15, 0x45, 0x06
    allow, errno = 0x7FFF0000, 0x00050000
    program = [
        (ld, 0, 0, 4),  # 0: the architecture
        (jeq, 0, 7, arch),  # 1: another one: allow (9)
        (ld, 0, 0, 0),  # 2: the syscall number
        (jeq, 7, 0, clone3),  # 3: -> ENOSYS (11); glibc then falls back to clone
        (jeq, 5, 0, setns),  # 4: -> EPERM (10)
        (jeq, 1, 0, unshare),  # 5: -> check the flags (7)
        (jeq, 0, 2, clone),  # 6: clone: check the flags (7); anything else: allow (9)
        (ld, 0, 0, 16),  # 7: the low word of the first argument, the flags
        (jset, 1, 0, _NAMESPACE_FLAGS),  # 8: a namespace flag -> EPERM (10)
        (ret, 0, 0, allow),  # 9
        (ret, 0, 0, errno | _EPERM),  # 10
        (ret, 0, 0, errno | _ENOSYS),  # 11
    ]
    code = b"".join(struct.pack("HBBI", *insn) for insn in program)
    buffer = ctypes.create_string_buffer(code)

    class Program(ctypes.Structure):
        _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_void_p))

    prog = Program(len(program), ctypes.addressof(buffer))
    linux.prctl(linux.PR_SET_NO_NEW_PRIVS, 1)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(22, 2, ctypes.byref(prog), 0, 0) != 0:  # PR_SET_SECCOMP, MODE_FILTER
        raise OSError(ctypes.get_errno(), "seccomp")


def _reachable_interpreter() -> None:
    """Mask directories an unprivileged uid could not traverse to this interpreter."""
    linux.unshare(linux.CLONE_NEWNS)
    linux.mount(None, "/", None, linux.MS_REC | linux.MS_PRIVATE, None)
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    paths.update(p for p in sys.path if p and os.path.isabs(p))
    for mask in masks_for(sorted(p for p in paths if os.path.exists(p))):
        apply_mask(mask)


def _user_namespace(count: int) -> None:
    """Become root of a new user namespace that maps ids 0 to ``count - 1`` to the host's. A
    helper left outside writes the maps (only a process of the parent namespace may)."""
    go_r, go_w = os.pipe()
    helper = os.fork()
    if helper == 0:  # pragma: no cover - runs in the helper
        os.close(go_w)
        os.read(go_r, 1)
        for name in ("uid_map", "gid_map"):
            with open(f"/proc/{os.getppid()}/{name}", "w") as fh:
                fh.write(f"0 0 {count}")
        os._exit(0)
    os.close(go_r)
    linux.unshare(linux.CLONE_NEWUSER)
    os.write(go_w, b"x")
    os.close(go_w)
    _, status = os.waitpid(helper, 0)
    if status != 0 or os.geteuid() != 0:
        raise SystemExit("modes: the user namespace's maps could not be written")


@contextlib.contextmanager
def delegated_cgroup(uid: int) -> Iterator[str]:
    """A cgroup v2 subtree delegated to ``uid`` as systemd delegates one (the directory and
    its cgroup.procs, cgroup.subtree_control and cgroup.threads belong to it), with a leaf
    for the processes that start in it; yields the leaf, removes the subtree after. Raises
    LookupError where there is no writable cgroup v2 file system."""
    with open("/proc/self/mountinfo") as fh:
        mounts = fh.read().splitlines()
    mount = next(
        (
            line.split(" - ")[0].split()[4]
            for line in mounts
            if line.partition(" - ")[2].startswith("cgroup2 ")
        ),
        None,
    )
    if mount is None or not os.access(mount, os.W_OK):
        raise LookupError("no writable cgroup v2 file system here")
    top = os.path.join(mount, f"scorewright-test-{os.getpid()}-{uid}-{next(_subtrees)}")
    leaf = os.path.join(top, "leaf")
    os.mkdir(top)
    try:
        os.mkdir(leaf)
        for directory in (top, leaf):
            os.chown(directory, uid, uid)
            for name in ("cgroup.procs", "cgroup.subtree_control", "cgroup.threads"):
                os.chown(os.path.join(directory, name), uid, uid)
        yield leaf
    finally:
        # The command's own processes (its warm parent, say) may still be ending: end them,
        # as systemd ends a unit's, and wait until the kernel says the subtree is empty.
        with contextlib.suppress(OSError), open(os.path.join(top, "cgroup.kill"), "w") as fh:
            fh.write("1")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and "populated 1" in _events(top):
            time.sleep(0.01)
        for directory, _, _ in sorted(os.walk(top), key=lambda w: -len(w[0])):
            with contextlib.suppress(OSError):
                os.rmdir(directory)


def _events(cgroup: str) -> str:
    try:
        with open(os.path.join(cgroup, "cgroup.events")) as fh:
            return fh.read()
    except OSError:
        return ""


def _hide_cgroups() -> None:
    # A container's cgroup file system is read-only or absent: here, absent.
    if os.path.isdir("/sys/fs/cgroup"):
        linux.mount("tmpfs", "/sys/fs/cgroup", "tmpfs", linux.MS_RDONLY, None)


def enter(mode: str, uid: int) -> None:
    """Make this process (root) the host ``mode`` describes."""
    if mode not in MODES:
        raise SystemExit(f"modes: no mode {mode!r}; use one of {', '.join(MODES)}")
    if mode == "root":
        return
    if mode == "rootless-container":
        _user_namespace(65536)
        return
    if mode == "userns-root-only":
        _user_namespace(1)
        return
    _reachable_interpreter()
    if mode == "container":
        _hide_cgroups()
    if mode == "user-no-namespaces-cgroup":
        with open(os.path.join(os.environ[CGROUP_ENV], "cgroup.procs"), "w") as fh:
            fh.write("0")  # as root: the delegated subtree's leaf, where systemd starts one
    if mode in ("user", "user-subids", "user-no-namespaces", "user-no-namespaces-cgroup"):
        gid = pwd.getpwuid(uid).pw_gid if mode == "user-subids" else uid
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
    if mode in ("user-no-namespaces", "user-no-namespaces-cgroup", "container"):
        refuse_namespaces()


def main(argv: Sequence[str]) -> None:
    mode, uid, sep, *command = argv
    if sep != "--" or not command:
        raise SystemExit("usage: python -m tests.modes MODE UID -- COMMAND...")
    enter(mode, int(uid))
    os.execvp(command[0], command)  # noqa: S606 - the test's own command


if __name__ == "__main__":
    main(sys.argv[1:])
