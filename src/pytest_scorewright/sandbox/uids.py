"""Which uid each run gets: a block of uids per process that plans runs, one uid per run.

Root's runs take theirs from 1,000,000 on, far above any user's, where the user namespace it
runs in maps them: on a host, and in a container whose namespace maps every id. Root in a
user namespace that maps fewer ids (rootless Podman or Docker, Kubernetes pods with
``hostUsers: false``: usually ids 0-65535) takes them from the largest range both its uid
and gid maps hold, above the highest regular user (60,000, login.defs' default UID_MAX)
where that leaves a block, and never the overflow ids 65534 and 65535. A namespace that maps
root alone gives no uid to change to: runs stay root there, and the result says so.

An ordinary user's runs take theirs from its subordinate ids (subids.py), in the same blocks.
"""

from __future__ import annotations

#: Root's runs: 4,096 blocks from here (by the planning process's pid), 256 uids each.
UID_BASE = 1_000_000
ROOT_SPAN = 4096 * 256
#: Uids a process's runs cycle through.
BLOCK = 256
#: The highest regular user's uid (login.defs' UID_MAX default), and the overflow ids.
_REGULAR_MAX = 60_000
_OVERFLOW = (65534, 65535)


def block(first: int, count: int, pid: int) -> tuple[int, int]:
    """The uids (first, how many) of the runs planned by process ``pid``, out of ``count``
    from ``first``: a block of :data:`BLOCK` per process, so that concurrent Evaluators
    rarely share one."""
    width = max(1, min(BLOCK, count))
    return first + (pid % max(1, count // width)) * width, width


def pick(first: int, count: int, pid: int, serial: int) -> int:
    """The uid of process ``pid``'s ``serial``-th run."""
    start, width = block(first, count, pid)
    return start + serial % width


def root_range(uid_map: str, gid_map: str) -> tuple[int, int] | str:
    """The uids (first, how many) root's runs take theirs from in a user namespace with these
    maps (``/proc/self/uid_map``, ``gid_map``), or why there are none."""
    both = _intersect(_ranges(uid_map), _ranges(gid_map))
    if any(lo <= UID_BASE and hi >= UID_BASE + ROOT_SPAN for lo, hi in both):
        return UID_BASE, ROOT_SPAN
    usable = []
    for lo, hi in both:
        lo = max(lo, 1)  # never root's own id
        for overflow in _OVERFLOW:
            if lo <= overflow < hi:
                hi = overflow  # the overflow ids end the range
        if hi - lo >= 2:
            usable.append((lo, hi))
    if not usable:
        return "this user namespace maps no uid and gid but root's to change to"
    lo, hi = max(usable, key=lambda r: r[1] - r[0])
    above = max(lo, _REGULAR_MAX + 1)
    if hi - above >= BLOCK:
        return above, hi - above
    half = lo + (hi - lo) // 2
    return half, hi - half


def _ranges(text: str) -> list[tuple[int, int]]:
    """The ids (from, to) a map's lines make valid in this namespace."""
    found = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) == 3 and all(f.isdigit() for f in fields):
            inside, count = int(fields[0]), int(fields[2])
            found.append((inside, inside + count))
    return found


def _intersect(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> list[tuple[int, int]]:
    return [
        (max(lo1, lo2), min(hi1, hi2))
        for lo1, hi1 in a
        for lo2, hi2 in b
        if max(lo1, lo2) < min(hi1, hi2)
    ]
