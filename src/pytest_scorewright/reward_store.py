"""The reward service's requests and answers, kept in SQLite (the standard library's): a
request id is answered once, however often it is asked, and across a restart.

A request with an ``id`` is recorded before it is scored (``running``, with its task and
source) and its answer after (``done``). The same id asked again gets the stored answer (a
request still being scored is waited for); the same id with another task or source is a
conflict. When the service starts, the requests a killed predecessor left ``running`` are
scored again (``unfinished``), so a trainer that retries after a restart gets an answer and
no request is scored into two different rewards.

The store is an interface (:class:`Store`): :class:`SqliteStore` is the default, ``:memory:``
keeps it for the process's life only. Every connection is this process's and serialised by
one lock: SQLite in WAL mode takes a few hundred microseconds a write, against a second or
more a candidate's scoring takes.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from pytest_scorewright.errors import ConfigError

#: An id a caller may give: printable, short.
MAX_ID = 200
#: How long a request waits for the same id being scored in another thread.
WAIT_S = 600.0


class Conflict(Exception):
    """The id was used for another request (another task or source)."""


class Store(Protocol):
    """What the reward service needs of a store of requests and answers."""

    def begin(
        self, rid: str, task: str, source: str, *, recovering: bool = False
    ) -> dict[str, Any] | None:
        """The stored answer to ``rid`` (waiting while it is being scored elsewhere), or None
        once ``rid`` is recorded as running here: the caller scores it and calls
        :meth:`finish` (or :meth:`abandon`). Conflict if ``rid`` was another request.
        ``recovering``: the caller is scoring again what :meth:`unfinished` gave it."""

    def finish(self, rid: str, answer: dict[str, Any]) -> None: ...

    def abandon(self, rid: str) -> None:
        """No answer after all (the service stopped mid-score): left for a restart."""

    def unfinished(self) -> list[tuple[str, str, str]]:
        """``(id, task, source)`` of requests left running by a process that is gone."""

    def close(self) -> None: ...


class SqliteStore:
    """:class:`Store` in one SQLite file (or ``:memory:``)."""

    def __init__(self, path: str) -> None:
        try:
            self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS requests (id TEXT PRIMARY KEY, digest TEXT NOT NULL,"
                " task TEXT NOT NULL, source TEXT NOT NULL, answer TEXT, at REAL NOT NULL)"
            )
        except sqlite3.Error as exc:
            raise ConfigError(
                f"cannot open the result store {path!r} ({exc}); check --store"
            ) from None
        self._lock = threading.Lock()
        self._done = threading.Condition(self._lock)
        #: Ids this process is scoring now: a second request for one waits for it.
        self._mine: set[str] = set()
        # What a killed predecessor left running is this process's to score again.
        self._left = [
            (str(rid), str(task), str(source))
            for rid, task, source in self._db.execute(
                "SELECT id, task, source FROM requests WHERE answer IS NULL ORDER BY at"
            )
        ]
        self._mine.update(rid for rid, _, _ in self._left)

    def begin(
        self, rid: str, task: str, source: str, *, recovering: bool = False
    ) -> dict[str, Any] | None:
        digest = _digest(task, source)
        deadline = time.monotonic() + WAIT_S
        with self._done:
            while True:
                row = self._db.execute(
                    "SELECT digest, answer FROM requests WHERE id = ?", (rid,)
                ).fetchone()
                if row is None:
                    self._db.execute(
                        "INSERT INTO requests VALUES (?, ?, ?, ?, NULL, ?)",
                        (rid, digest, task, source, time.time()),
                    )
                    self._mine.add(rid)
                    return None
                if row[0] != digest:
                    raise Conflict(f"request id {rid!r} was used for another task or source")
                if row[1] is not None:
                    answer: dict[str, Any] = json.loads(row[1])
                    return answer
                if recovering or rid not in self._mine:  # nobody's scoring it: ours
                    self._mine.add(rid)
                    return None
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"request id {rid!r} is still being scored; retry")
                self._done.wait(min(left, 1.0))

    def finish(self, rid: str, answer: dict[str, Any]) -> None:
        with self._done:
            self._db.execute(
                "UPDATE requests SET answer = ? WHERE id = ?", (json.dumps(answer), rid)
            )
            self._mine.discard(rid)
            self._done.notify_all()

    def abandon(self, rid: str) -> None:
        with self._done:
            self._mine.discard(rid)
            self._done.notify_all()

    def unfinished(self) -> list[tuple[str, str, str]]:
        with self._lock:
            left, self._left = self._left, []
        return left

    def close(self) -> None:
        with self._lock:
            self._db.close()


def check_id(rid: object) -> str | None:
    """A request id as given (None where there is none); a ConfigError for a bad one."""
    if rid is None:
        return None
    if not isinstance(rid, str) or not rid or len(rid) > MAX_ID or not rid.isprintable():
        raise ConfigError(f"'id' must be a printable string of at most {MAX_ID} characters")
    return rid


@contextmanager
def recorded(
    store: Store, rid: str | None, task: str, source: str, *, recovering: bool = False
) -> Iterator[Any]:
    """Yields a holder: ``.stored`` and ``.answer`` where ``rid`` was answered before;
    otherwise the caller scores it and sets ``.answer``, which is kept (left unset, the
    request stays unanswered for a retry). Without an id, nothing is kept."""
    holder = _Holder()
    if rid is None:
        yield holder
        return
    found = store.begin(rid, task, source, recovering=recovering)
    if found is not None:
        holder.answer, holder.stored = found, True
        yield holder
        return
    try:
        yield holder
    except BaseException:
        store.abandon(rid)
        raise
    if holder.answer is None:
        store.abandon(rid)
    else:
        store.finish(rid, holder.answer)


class _Holder:
    def __init__(self) -> None:
        self.answer: dict[str, Any] | None = None
        self.stored = False


def _digest(task: str, source: str) -> str:
    return hashlib.sha256(json.dumps([task, source]).encode()).hexdigest()
