"""Candidates as a loop hands them over: program text to write out (an RL environment's
completion), and identical content seen again (evolution loops re-propose programs), which
is scored once per Evaluator."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import shutil
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from pathlib import Path

from pytest_scorewright.errors import ConfigError
from pytest_scorewright.result import ScoreResult

#: Results kept for identical content (the oldest go first).
MAX_REMEMBERED = 1024
#: Candidates larger than this are scored every time (hashing them is not worth it).
MAX_HASHED_BYTES = 16 << 20


@contextlib.contextmanager
def source_file(code: str, module: str) -> Iterator[Path]:
    """``code`` written as ``<module>.py`` in a private directory, removed afterwards."""
    if not isinstance(code, str):
        raise ConfigError(f"score_source takes program text (str), not {type(code).__name__}")
    folder = Path(tempfile.mkdtemp(prefix="scorewright-source-"))
    try:
        path = folder / f"{module}.py"
        path.write_text(code, encoding="utf-8", errors="surrogateescape")
        yield path
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def content_key(path: Path, *parts: object) -> str | None:
    """A digest of the candidate's files (names and bytes) and ``parts``; None where it is
    too large to be worth it or cannot be read (then it is simply scored)."""
    digest = hashlib.sha256(repr(parts).encode())
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    total = 0
    for file in files:
        try:
            data = file.read_bytes()
        except OSError:
            return None
        total += len(data)
        if total > MAX_HASHED_BYTES:
            return None
        digest.update(str(file.relative_to(path) if file != path else "").encode() + b"\0")
        digest.update(len(data).to_bytes(8, "big") + data)
    return digest.hexdigest()


class SeenResults:
    """Results by content key, for threads of one Evaluator.

    Example::

        seen = SeenResults()
        found = seen.get(key, path)  # None the first time
        seen.put(key, result)
    """

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self._results: OrderedDict[str, ScoreResult] = OrderedDict()
        self._lock = threading.Lock()
        self._local = threading.local()

    @contextlib.contextmanager
    def bypassed(self) -> Iterator[None]:
        """In this thread, neither answer from nor remember: repeats measure again."""
        before = getattr(self._local, "off", False)
        self._local.off = True
        try:
            yield
        finally:
            self._local.off = before

    def key(self, path: Path, only: Sequence[str] | None, heldout: bool) -> str | None:
        if not self.enabled or getattr(self._local, "off", False):
            return None
        return content_key(path, tuple(only) if only is not None else None, heldout)

    def get(self, key: str | None, path: Path) -> ScoreResult | None:
        """The result of identical content scored before, as this candidate's."""
        if key is None:
            return None
        with self._lock:
            found = self._results.get(key)
            if found is None:
                return None
            self._results.move_to_end(key)
        first = found.extra.get("candidate")
        extra = {**found.extra, "candidate": str(path), "same_content_as": first}
        return dataclasses.replace(found, extra=extra)

    def put(self, key: str | None, result: ScoreResult) -> None:
        if key is None or result.infrastructure:  # ours: worth another try
            return
        with self._lock:
            self._results[key] = result
            while len(self._results) > MAX_REMEMBERED:
                self._results.popitem(last=False)
