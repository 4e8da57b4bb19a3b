"""Thin ctypes wrappers for the few Linux calls the sandbox needs and Python lacks."""

from __future__ import annotations

import ctypes
import os
from typing import Any

# The C library the interpreter already links (dlopen(NULL)), not find_library("c"): that
# runs `ldconfig -p` in a subprocess at import, in every process that imports this.
_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_REMOUNT = 0x20
MS_NOATIME = 0x400
MS_NODIRATIME = 0x800
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 1 << 18
MS_RELATIME = 1 << 21
#: Flags a mount keeps through a read-only remount; in a user namespace the kernel refuses a
#: remount that would clear one the mount was locked with (statvfs's ST_* have these values).
MS_KEPT_ON_REMOUNT = MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_NOATIME | MS_NODIRATIME | MS_RELATIME

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4

_CAP_VERSION_3 = 0x20080522


def _check(result: int) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return result


def unshare(flags: int) -> None:
    _check(_libc.unshare(ctypes.c_int(flags)))


def setns(fd: int, nstype: int) -> None:
    _check(_libc.setns(ctypes.c_int(fd), ctypes.c_int(nstype)))


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


def prctl(option: int, arg: int = 0, arg3: int = 0) -> None:
    _check(
        _libc.prctl(
            ctypes.c_int(option),
            ctypes.c_ulong(arg),
            ctypes.c_ulong(arg3),
            ctypes.c_ulong(0),
            ctypes.c_ulong(0),
        )
    )


class _CapHeader(ctypes.Structure):
    _fields_ = (("version", ctypes.c_uint32), ("pid", ctypes.c_int))


class _CapData(ctypes.Structure):
    _fields_ = (
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    )


def drop_all_capabilities() -> None:
    """Empty this process's bounding, ambient, effective, permitted and inheritable sets.

    In a user namespace of its own a process holds every capability there whatever its uid,
    and with only one uid mapped it cannot shed them by changing uid: they must be dropped.
    """
    try:
        with open("/proc/sys/kernel/cap_last_cap", "rb") as fh:
            last = int(fh.read())
    except (OSError, ValueError):
        last = 63
    for cap in range(last + 1):
        try:
            prctl(PR_CAPBSET_DROP, cap)
        except PermissionError:
            break  # no CAP_SETPCAP, so no capability to regain: exec cannot add any (NNP)
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    header = _CapHeader(version=_CAP_VERSION_3, pid=0)
    data = (_CapData * 2)()  # zeroed: no capability in any set
    _check(_libc.capset(ctypes.byref(header), ctypes.byref(data)))


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
