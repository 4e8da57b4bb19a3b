"""Landlock (Linux >= 5.13): limit what the child can read, write, connect to and signal.

Landlock is an unprivileged allow-list: after ``restrict_self`` the process and everything it
starts can touch only the paths given here, with the rights given here. Which rights exist
depends on the kernel's ABI version, so everything is built from :func:`abi_version`.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Iterable
from dataclasses import dataclass

from pytest_scorewright.kernel import linux
from pytest_scorewright.protocol.wire import Policy

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1

# Filesystem rights by the ABI version that introduced them.
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_FS_V1 = (1 << 13) - 1  # EXECUTE .. MAKE_SYM
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
_FILE_ONLY = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX, SCOPE_SIGNAL = 1 << 0, 1 << 1

READ = EXECUTE | READ_FILE | READ_DIR


def abi_version() -> int:
    """The kernel's Landlock ABI version, or 0 where Landlock is absent or disabled."""
    try:
        return linux.syscall(_CREATE_RULESET, None, ctypes.c_size_t(0), _CREATE_RULESET_VERSION)
    except OSError:
        return 0


def fs_rights(abi: int) -> int:
    rights = _FS_V1
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    if abi >= 5:
        rights |= IOCTL_DEV
    return rights


class _RulesetAttr(ctypes.Structure):
    _fields_ = (
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    )


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = (("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))


@dataclass(frozen=True)
class Applied:
    abi: int
    fs: bool
    tcp: bool
    scoped: bool


def restrict_self(policy: Policy, abi: int) -> Applied:
    """Apply ``policy`` to this process for good. Needs no_new_privs (set here)."""
    all_fs = fs_rights(abi)
    attr = _RulesetAttr(handled_access_fs=all_fs)
    size = 8
    tcp = policy.deny_tcp and abi >= 4
    if abi >= 4:
        size = 16
        if tcp:
            attr.handled_access_net = NET_BIND_TCP | NET_CONNECT_TCP
    scoped = abi >= 6
    if scoped:
        size = 24
        attr.scoped = SCOPE_ABSTRACT_UNIX | SCOPE_SIGNAL
    ruleset = linux.syscall(_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), 0)
    try:
        _add_paths(ruleset, policy.readable, READ)
        _add_paths(ruleset, policy.writable, all_fs)
        linux.prctl(linux.PR_SET_NO_NEW_PRIVS, 1)
        linux.syscall(_RESTRICT_SELF, ruleset, 0)
    finally:
        os.close(ruleset)
    return Applied(abi=abi, fs=True, tcp=tcp, scoped=scoped)


def _add_paths(ruleset: int, paths: Iterable[str], rights: int) -> None:
    for path in paths:
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            continue  # absent on this system: nothing to allow
        try:
            allowed = rights if os.path.isdir(path) else rights & _FILE_ONLY
            rule = _PathBeneath(allowed_access=allowed, parent_fd=fd)
            linux.syscall(_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.byref(rule), 0)
        finally:
            os.close(fd)
