"""Linux namespaces for the child: its own PID, mount and network namespaces.

In a new PID namespace the first child is PID 1; when it dies the kernel kills every other
process in the namespace, however it tried to escape (``setsid``, double fork). That is what
makes "no process of a candidate outlives the run" hold. The mount namespace lets PID 1 mount
a private /proc (so the parent's processes are invisible) and hide directories the dropped uid
must not see; the network namespace has only a loopback interface.
"""

from __future__ import annotations

import fcntl
import os
import socket
import struct
from collections.abc import Sequence

from pytest_scorewright.child import linux
from pytest_scorewright.sandbox.wire import Mask

_SIOCGIFFLAGS, _SIOCSIFFLAGS = 0x8913, 0x8914
_IFF_UP, _IFF_RUNNING = 0x1, 0x40


def try_unshare(*, isolate_network: bool) -> str | None:
    """Enter new PID + mount (+ network) namespaces; None on success, else why not."""
    flags = linux.CLONE_NEWPID | linux.CLONE_NEWNS
    if isolate_network:
        flags |= linux.CLONE_NEWNET
    try:
        linux.unshare(flags)
    except OSError as exc:
        return f"unshare: {exc.strerror}"
    return None


def setup_as_init(
    masks: Sequence[Mask],
    stage_dir: str,
    *,
    loopback: bool,
    bind: tuple[str, str] | None = None,
) -> None:
    """Run as PID 1 of the new namespaces, still privileged: private mounts, own /proc,
    the work dir at its fixed path (``bind``: source, target), masks, loopback up."""
    linux.mount(None, "/", None, linux.MS_REC | linux.MS_PRIVATE, None)
    linux.mount("proc", "/proc", "proc", linux.MS_NOSUID | linux.MS_NODEV | linux.MS_NOEXEC, None)
    if bind is not None:  # before the masks, which might hide the source
        linux.mount(bind[0], bind[1], None, linux.MS_BIND | linux.MS_REC, None)
    for i, mask in enumerate(masks):
        _apply_mask(mask, os.path.join(stage_dir, str(i)))
    # A private, empty /dev/shm per run: multiprocessing needs it for its semaphores, and
    # nothing written there outlives the run (no cache shared across candidates).
    shm = "/dev/shm"  # noqa: S108 - mounted over with a tmpfs of this run's own
    if os.path.isdir(shm):
        linux.mount("tmpfs", shm, "tmpfs", linux.MS_NOSUID | linux.MS_NODEV, "mode=1777,size=64m")
    if loopback:
        _loopback_up()


def _apply_mask(mask: Mask, stage: str) -> None:
    os.makedirs(stage, exist_ok=True)
    staged = []
    for j, entry in enumerate(mask.keep):
        target = os.path.join(stage, str(j))
        os.mkdir(target)
        linux.mount(entry, target, None, linux.MS_BIND | linux.MS_REC, None)
        staged.append((entry, target))
    linux.mount("tmpfs", mask.directory, "tmpfs", linux.MS_NOSUID | linux.MS_NODEV, "mode=755")
    for entry, target in staged:
        final = os.path.join(mask.directory, os.path.basename(entry))
        os.mkdir(final)
        linux.mount(target, final, None, linux.MS_BIND | linux.MS_REC, None)
        linux.umount(target)


def _loopback_up() -> None:
    # A fresh network namespace has "lo" down; up, it lets tests use servers they start
    # themselves, while nothing outside the namespace is reachable.
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH14s", b"lo", 0, b"")
        flags = struct.unpack("16sH", fcntl.ioctl(sock, _SIOCGIFFLAGS, request)[:18])[1]
        request = struct.pack("16sH14s", b"lo", flags | _IFF_UP | _IFF_RUNNING, b"")
        fcntl.ioctl(sock, _SIOCSIFFLAGS, request)
