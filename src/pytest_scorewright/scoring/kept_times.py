"""Each task's reference times per test, kept between preparations (the caller's process).

A test's limits come from the reference's time for it (``Limits.calibrated``), rounded up to
1, 2, 3 or 5 times a power of ten. A time near a step's edge (0.44 s → 5 s, 0.51 s → 10 s)
still gave the same task different limits in two preparations, minutes apart. So the
first preparation of a task keeps the times it measured, and later ones of the same task
(the same suites and reference, byte for byte, the same interpreter, scorewright version,
budget and machine) take those, unless a test now takes over :data:`REMEASURE_RATIO` times
its kept time (the machine is not what it was: that test's new time is kept instead). Only
an honest program's limits depend on it, and only upward of the floors.

Where: ``$SCOREWRIGHT_TIMES_DIR`` if set (``off`` keeps nothing), else
``$XDG_CACHE_HOME/scorewright/times`` (``~/.cache``), a directory of the user's own (0700,
files 0600). The file names no test (each is kept under a digest of its suite and node id)
and holds only numbers. Anything that cannot be read or written there is measured afresh:
keeping times is a convenience, never a reason to refuse or fail.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import platform
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

from pytest_scorewright._version import __version__
from pytest_scorewright.user_cache import user_cache

ENV = "SCOREWRIGHT_TIMES_DIR"
#: A test that now takes this many times its kept time has its new time kept instead.
REMEASURE_RATIO = 3.0
#: Files past this size are not read (a task's times are a few kB; 10,000 tests ~ 700 kB).
MAX_FILE_BYTES = 8 << 20

Pair = tuple[float | None, float | None]
Times = Mapping[tuple[str, str], Pair]


def directory() -> Path | None:
    """Where times are kept (None: nowhere)."""
    named = os.environ.get(ENV)
    if named is not None:
        return None if named.strip().lower() in ("", "off", "0", "no") else Path(named)
    return user_cache("times")


def task_key(content: str | None, *parts: object) -> str | None:
    """The key of a task's times: ``content`` (a digest of its suites and reference, None
    where they were too large to digest), ``parts`` (its settings) and this machine."""
    if content is None:
        return None
    machine = (platform.node(), platform.machine(), sys.version, sys.executable, __version__)
    return hashlib.sha256(repr((content, machine, parts)).encode()).hexdigest()[:32]


def _test_key(suite: str, nodeid: str) -> str:
    return hashlib.sha256(f"{suite}\0{nodeid}".encode()).hexdigest()[:24]


def kept(key: str | None, measured: Times) -> dict[tuple[str, str], Pair]:
    """The times to set limits by: the kept ones where this task has them (each test's new
    time where it is over :data:`REMEASURE_RATIO` times its kept one), ``measured`` where not;
    what is returned is kept for next time."""
    where = directory()
    if key is None or where is None:
        return dict(measured)
    old = _read(where / f"{key}.json")
    chosen: dict[tuple[str, str], Pair] = {}
    for test, (wall, cpu) in measured.items():
        before = old.get(_test_key(*test))
        if before is not None and not _much_slower((wall, cpu), before):
            chosen[test] = before
        else:
            chosen[test] = (wall, cpu)
    keep = {_test_key(*t): v for t, v in chosen.items()}
    if keep != old:
        _write(where, f"{key}.json", {k: list(v) for k, v in keep.items()})
    return chosen


def _much_slower(now: Pair, before: Pair) -> bool:
    return any(
        n is not None and b is not None and n > REMEASURE_RATIO * max(b, 0.01)
        for n, b in zip(now, before, strict=True)
    )


def _number(value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value) if value >= 0 else None
    raise ValueError(value)


def _read(path: Path) -> dict[str, Pair]:
    """The times kept at ``path`` ({} where there are none, or none that can be trusted to be
    ours: a file not owned by this uid, too large, or not what :func:`_write` writes)."""
    try:
        with open(path, "rb") as f:
            info = os.fstat(f.fileno())
            if info.st_uid != os.getuid() or info.st_size > MAX_FILE_BYTES:
                return {}
            data = json.loads(f.read(MAX_FILE_BYTES))
        return {
            str(k): (_number(v[0]), _number(v[1]))
            for k, v in data.items()
            if isinstance(v, list) and len(v) == 2
        }
    except (OSError, ValueError, AttributeError, TypeError):
        return {}


def _write(where: Path, name: str, data: dict[str, list[float | None]]) -> None:
    with contextlib.suppress(OSError):
        where.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".times-", dir=where)  # 0600
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(data, f, sort_keys=True)
            os.replace(tmp, where / name)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
