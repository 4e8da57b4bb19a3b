"""Linux namespaces for the child: its own user (when not root), PID, mount, network, IPC and
UTS namespaces, and the run's view of the file system.

In a new PID namespace the first child is PID 1; when it dies the kernel kills every other
process in the namespace, however it tried to escape (``setsid``, double fork). That is what
makes "no process of a candidate outlives the run" hold. The mount namespace lets PID 1 mount
a private /proc (so the parent's processes are invisible), show the run only the directories
it needs (every other top-level directory behind an empty tmpfs: no host socket, pathname or
under /dev, is reachable), and keep the work dir read-only but for the candidate's own
directories; the network namespace has only a loopback interface (and its own abstract unix
socket space), the IPC namespace its own System V and POSIX message queue objects.

An ordinary user enters a user namespace first. Where the caller has subordinate ids, a run
joins the user namespace this process's keeper holds, mapped with them (sandbox/subids.py),
and its worker changes to a uid of the run's own, as root's runs do; the run's writable
directories are handed to that uid first and back when the run ends (:func:`hand_over`).
Otherwise the run makes a user namespace of its own, in the same call, that maps only the
caller's uid and gid. Either way the user namespace owns the other namespaces, so PID 1 may
mount in them; its processes hold every capability inside it, which the worker drops (a
change of uid, or confine.py's drop) before any candidate code runs.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import struct
from collections.abc import Sequence

from pytest_scorewright.kernel import linux
from pytest_scorewright.protocol.wire import Mask

_SIOCGIFFLAGS, _SIOCSIFFLAGS = 0x8913, 0x8914
_IFF_UP, _IFF_RUNNING = 0x1, 0x40

#: Every run gets these; the network namespace is left out when the network is allowed.
_FLAGS = linux.CLONE_NEWPID | linux.CLONE_NEWNS | linux.CLONE_NEWIPC | linux.CLONE_NEWUTS

#: Device nodes bound back into the run's own /dev (the rest of the host's /dev, sockets such
#: as /dev/log included, is not there).
DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
_DEV_LINKS = {
    "fd": "/proc/self/fd",
    "stdin": "/proc/self/fd/0",
    "stdout": "/proc/self/fd/1",
    "stderr": "/proc/self/fd/2",
    "ptmx": "pts/ptmx",
}


class MappingFailed(RuntimeError):
    """unshare(CLONE_NEWUSER) worked but the uid map could not be written: this process is
    in a namespace with no uid of its own and must not go on."""


def try_unshare(*, isolate_network: bool, user: bool, shared: int | None = None) -> str | None:
    """Enter the new namespaces (a user namespace first when ``user``: the one whose file
    ``shared`` is, or a new one); None on success, else why not (this process is then
    unchanged, but perhaps for having joined ``shared``)."""
    flags = _FLAGS | (linux.CLONE_NEWNET if isolate_network else 0)
    uid, gid = os.geteuid(), os.getegid()
    if user and shared is not None:
        try:
            linux.setns(shared, linux.CLONE_NEWUSER)
        except OSError as exc:
            return f"setns into the mapped user namespace: {exc.strerror}"
        user = False  # joined: mapped already
    try:
        linux.unshare(flags | (linux.CLONE_NEWUSER if user else 0))
    except OSError as exc:
        return f"unshare: {exc.strerror}"
    if user:
        try:
            _map_self(uid, gid)
        except OSError as exc:
            raise MappingFailed(f"user namespace map: {exc.strerror}") from exc
    return None


def _map_self(uid: int, gid: int) -> None:
    # An unprivileged process may map its own uid and gid only, and the gid only after giving
    # up setgroups (so it cannot drop a group that denies it access): the caller's
    # supplementary groups stay in force for permission checks on host files.
    with open("/proc/self/setgroups", "w") as fh:
        fh.write("deny")
    with open("/proc/self/uid_map", "w") as fh:
        fh.write(f"{uid} {uid} 1")
    with open("/proc/self/gid_map", "w") as fh:
        fh.write(f"{gid} {gid} 1")


def hand_over(paths: Sequence[str], uid: int) -> None:
    """Give ``paths`` (and all below them) to ``uid``: a run's writable directories, before
    the run starts; by root's planner, or by a run's trusted process once in the mapped user
    namespace (subordinate ids)."""
    _chown_trees(paths, uid, strict=True)


def give_back(paths: Sequence[str]) -> None:
    """Give ``paths`` (and all below them) back to the caller (uid 0 of the mapped user
    namespace) once the run has ended, so that the caller can remove them. Never follows a
    link, and can only ever make a file the caller's: a file the run swapped for a link to
    somewhere else is the caller's, or not changeable, already."""
    _chown_trees(paths, 0, strict=False)


def _chown_trees(paths: Sequence[str], uid: int, *, strict: bool) -> None:
    for top in paths:
        below = (
            os.path.join(dirpath, name)
            for dirpath, dirnames, filenames in os.walk(top)
            for name in (*dirnames, *filenames)
        )
        for path in (top, *below):
            try:
                os.lchown(path, uid, uid)
            except FileNotFoundError:
                continue
            except OSError:
                if strict:
                    raise


def setup_as_init(
    masks: Sequence[Mask],
    *,
    loopback: bool,
    bind: tuple[str, str] | None = None,
    work: tuple[str, Sequence[str]] | None = None,
) -> None:
    """Run as PID 1 of the new namespaces, still privileged: private mounts, own /proc, the
    work dir at its fixed path (``bind``: source, target), the work dir read-only but for
    some directories (``work``: its root as the run sees it, the writable ones), the masks,
    a /dev of its own, loopback up."""
    linux.mount(None, "/", None, linux.MS_REC | linux.MS_PRIVATE, None)
    linux.mount("proc", "/proc", "proc", linux.MS_NOSUID | linux.MS_NODEV | linux.MS_NOEXEC, None)
    if bind is not None:  # before the masks, which might hide the source
        linux.mount(bind[0], bind[1], None, linux.MS_BIND | linux.MS_REC, None)
    if work is not None:
        _read_only_but(*work)
    for mask in masks:
        apply_mask(mask)
    _private_dev()
    if loopback:
        _loopback_up()


def _read_only_but(root: str, writable: Sequence[str]) -> None:
    """``root`` read-only, each of ``writable`` (below it) writable: the copied tests, the
    ini file and the root itself stay as the parent wrote them, whatever the run's uid."""
    linux.mount(root, root, None, linux.MS_BIND | linux.MS_REC, None)
    for path in writable:
        linux.mount(path, path, None, linux.MS_BIND | linux.MS_REC, None)
    _remount_read_only(root)


def _remount_read_only(path: str) -> None:
    kept = os.statvfs(path).f_flag & linux.MS_KEPT_ON_REMOUNT
    flags = linux.MS_REMOUNT | linux.MS_BIND | linux.MS_RDONLY | kept
    linux.mount(None, path, None, flags, None)


def apply_mask(mask: Mask) -> None:
    """Hide ``mask.directory`` behind an empty read-only tmpfs, with each path of
    ``mask.keep`` (at any depth below it) bound back where it was, read-only.

    Each kept path is opened before the tmpfs covers it and bound from its descriptor
    (``/proc/self/fd/N`` names the covered directory itself), so no staging directory is
    needed.
    """
    held = []
    try:
        for entry in mask.keep:
            with contextlib.suppress(FileNotFoundError):
                held.append((entry, os.open(entry, os.O_PATH | os.O_CLOEXEC)))
        flags = linux.MS_NOSUID | linux.MS_NODEV | (0 if held else linux.MS_RDONLY)
        linux.mount("tmpfs", mask.directory, "tmpfs", flags, "mode=755,size=1m")
        if not held:
            return  # nothing to bind back: read-only from the start
        for entry, fd in held:
            _bind_back(fd, entry)
        _remount_read_only(mask.directory)
        for entry, _ in held:
            _remount_read_only(entry)
    finally:
        for _, fd in held:
            os.close(fd)


def _bind_back(fd: int, target: str) -> None:
    is_dir = os.path.isdir(f"/proc/self/fd/{fd}")
    # The directories on the way must let the run's uid through, whatever the caller's umask.
    umask = os.umask(0o022)
    try:
        os.makedirs(target if is_dir else os.path.dirname(target), mode=0o755, exist_ok=True)
        if not is_dir:
            os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o644))
    finally:
        os.umask(umask)
    linux.mount(f"/proc/self/fd/{fd}", target, None, linux.MS_BIND | linux.MS_REC, None)


def _private_dev() -> None:
    """A /dev of the run's own: the harmless device nodes bound back, the usual links, an
    empty /dev/shm (multiprocessing needs it for its semaphores; nothing written there
    outlives the run, so no cache is shared across candidates) and, where the kernel allows
    it here, a devpts of its own for pseudo-terminals."""
    dev = "/dev"
    held = []
    try:
        for name in DEVICES:
            with contextlib.suppress(OSError):
                held.append((name, os.open(f"{dev}/{name}", os.O_PATH | os.O_CLOEXEC)))
        linux.mount("tmpfs", dev, "tmpfs", linux.MS_NOSUID | linux.MS_NOEXEC, "mode=755,size=1m")
        for name, fd in held:
            _bind_back(fd, f"{dev}/{name}")
    finally:
        for _, fd in held:
            os.close(fd)
    for name, target in _DEV_LINKS.items():
        os.symlink(target, f"{dev}/{name}")
    shm = f"{dev}/shm"
    os.mkdir(shm)
    linux.mount("tmpfs", shm, "tmpfs", linux.MS_NOSUID | linux.MS_NODEV, "mode=1777,size=64m")
    os.mkdir(f"{dev}/pts")
    with contextlib.suppress(OSError):  # pseudo-terminals are a convenience, not a guarantee
        linux.mount(
            "devpts",
            f"{dev}/pts",
            "devpts",
            linux.MS_NOSUID | linux.MS_NOEXEC,
            "newinstance,ptmxmode=0666,mode=0620",
        )
    _remount_read_only(dev)


def apart_in_gvisor(isolate_network: bool) -> None:
    """Inside gVisor (sandbox/gvisor.py): this process and what it starts get IPC and UTS
    namespaces of their own and (``isolate_network``) a network namespace whose only
    interface is a loopback of their own (gVisor brings it up itself, and has no
    SIOCSIFFLAGS to do it). No mount namespace: this gVisor's are not apart (a mount made in
    one shows in every other), so a run mounts nothing."""
    flags = linux.CLONE_NEWIPC | linux.CLONE_NEWUTS
    linux.unshare(flags | (linux.CLONE_NEWNET if isolate_network else 0))


def _loopback_up() -> None:
    # A fresh network namespace has "lo" down; up, it lets tests use servers they start
    # themselves, while nothing outside the namespace is reachable.
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH14s", b"lo", 0, b"")
        flags = struct.unpack("16sH", fcntl.ioctl(sock, _SIOCGIFFLAGS, request)[:18])[1]
        request = struct.pack("16sH14s", b"lo", flags | _IFF_UP | _IFF_RUNNING, b"")
        fcntl.ioctl(sock, _SIOCSIFFLAGS, request)
