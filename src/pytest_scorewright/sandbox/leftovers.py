"""Work dirs whose owner is dead, found and removed by the next Evaluator (in the caller).

A run's work dir is removed by the caller when the run ends, by the warm parent when the
caller dies (it watches the caller), or by the janitor (``warm=False``). All three can be
killed at once: a container stopped, the OOM killer, ``kill -9`` of a whole session. What is
left then holds copies of the candidate and of the tests, held-out tests included (private to
their owner). So each work dir names its owner as it is made (``.owner``, written by
sandbox/workspace.py: the caller's pid and start time), and every Evaluator, as it is
prepared, removes the ``scorewright-*`` dirs of the same base that its uid owns and whose
owner is no longer alive. A dir without the file says its owner in its name (a caller killed
between making it and writing the file); one without either (an older version's) is left
alone.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
from pathlib import Path

from pytest_scorewright.kernel.procfs import start_ticks
from pytest_scorewright.sandbox import subids
from pytest_scorewright.sandbox.workspace import OWNER_FILE, remove_work_dir

#: Most entries of the base looked at in one sweep (a shared /tmp can be large).
MAX_ENTRIES = 10_000


def sweep(base: Path | None) -> list[Path]:
    """Remove the work dirs in ``base`` (the temp dir by default) whose owner died; the
    ones removed."""
    where = Path(base) if base is not None else Path(tempfile.gettempdir())
    removed = []
    try:
        entries = os.scandir(where)
    except OSError:
        return []
    with entries:
        for count, entry in enumerate(entries):
            if count >= MAX_ENTRIES:
                break
            if entry.name.startswith("scorewright-") and _orphaned(entry):
                path = Path(entry.path)
                remove_work_dir(path, None)
                if os.path.lexists(path) and os.geteuid() != 0:
                    subids.remove_left(str(path))  # files of a run's own subordinate uid
                if not os.path.lexists(path):
                    removed.append(path)
    return removed


#: The owner in a work dir's own name (workspace.owned_tempdir): ``-<pid>.<ticks>-`` and
#: mkdtemp's eight characters.
_NAMED_OWNER = re.compile(r"-(\d+)\.(\d+)-[A-Za-z0-9_]{8}$")


def _orphaned(entry: os.DirEntry[str]) -> bool:
    """A directory (not a link) of this uid whose ``.owner``, or failing that whose name,
    names a process that is gone."""
    with contextlib.suppress(OSError, ValueError):
        info = entry.stat(follow_symlinks=False)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
            return False
        owner = Path(entry.path, OWNER_FILE)
        if owner.is_symlink():
            return False
        try:
            with owner.open("rb") as fh:
                pid_text, started_text = fh.read(64).split()[:2]
        except FileNotFoundError:  # killed before it was written: the name says it
            named = _NAMED_OWNER.search(entry.name)
            if named is None:
                return False  # an older version's dir: left alone
            pid_text, started_text = named.group(1).encode(), named.group(2).encode()
        pid, started = int(pid_text), int(started_text)
        return pid > 0 and start_ticks(pid) != started
    return False
