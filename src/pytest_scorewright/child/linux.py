"""Thin ctypes wrappers for the few Linux calls the sandbox needs and Python lacks."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from typing import Any

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
_libc.syscall.restype = ctypes.c_long

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 1 << 18
MNT_DETACH = 0x2

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38


def _check(result: int) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return result


def unshare(flags: int) -> None:
    _check(_libc.unshare(ctypes.c_int(flags)))


def mount(
    source: str | None, target: str, fstype: str | None, flags: int, data: str | None
) -> None:
    _check(
        _libc.mount(
            source.encode() if source else None,
            target.encode(),
            fstype.encode() if fstype else None,
            ctypes.c_ulong(flags),
            data.encode() if data else None,
        )
    )


def umount(target: str, flags: int = MNT_DETACH) -> None:
    _check(_libc.umount2(target.encode(), ctypes.c_int(flags)))


def prctl(option: int, arg: int = 0) -> None:
    _check(
        _libc.prctl(
            ctypes.c_int(option),
            ctypes.c_ulong(arg),
            ctypes.c_ulong(0),
            ctypes.c_ulong(0),
            ctypes.c_ulong(0),
        )
    )


def syscall(number: int, *args: Any) -> int:
    return _check(int(_libc.syscall(ctypes.c_long(number), *args)))


def wipe_initial_environment() -> None:
    """Zero this process's original environment block, which /proc/self/environ shows.

    A forked child shares the block its parent was started with (secrets included), whatever
    os.environ says later; overwriting it is the only way short of re-exec.
    """
    with open("/proc/self/stat", "rb") as fh:
        fields = fh.read().rsplit(b")", 1)[1].split()
    # Fields 50 and 51 (1-based, Linux >= 3.5) are env_start and env_end; the split list
    # starts at field 3.
    start, end = int(fields[47]), int(fields[48])
    if 0 < start < end:
        ctypes.memset(start, 0, end - start)
