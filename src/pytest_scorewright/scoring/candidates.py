"""Candidates as a loop hands them over: program text to write out (an RL environment's
completion), and identical content seen again (evolution loops re-propose programs), which
is scored once per Evaluator."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import shutil
import stat
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from pathlib import Path

from pytest_scorewright.errors import ConfigError
from pytest_scorewright.result import ScoreResult
from pytest_scorewright.sandbox.workspace import owned_tempdir

#: Results kept for identical content (the oldest go first).
MAX_REMEMBERED = 1024
#: Candidates larger than this are scored every time (hashing them is not worth it).
MAX_HASHED_BYTES = 16 << 20


@contextlib.contextmanager
def source_file(code: str, module: str) -> Iterator[Path]:
    """``code`` written as ``<module>.py`` in a private directory, removed afterwards."""
    if not isinstance(code, str):
        raise ConfigError(f"score_source takes program text (str), not {type(code).__name__}")
    folder = owned_tempdir("scorewright-source-", None)  # a caller killed mid-score
    try:  # leaves it to the next sweep
        path = folder / f"{module}.py"
        try:
            path.write_text(code, encoding="utf-8", errors="surrogateescape")
        except UnicodeEncodeError:
            # A lone surrogate (a model's broken escape): written as it is, the file is not
            # UTF-8, and the candidate's import fails as its own (a syntax error), scored.
            path.write_text(code, encoding="utf-8", errors="surrogatepass")
        yield path
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def content_key(path: Path, *parts: object, skip: frozenset[str] = frozenset()) -> str | None:
    """A digest of the candidate's files (names and bytes) and ``parts``; None where it is
    too large to be worth it or cannot be read (then it is simply scored). Directories named
    in ``skip`` are left out.

    What a run copies, read as it copies it: regular files only, no link followed (a link to
    a large host file must not be read by this process), each file's size checked before
    it is read, and no read past the budget."""
    digest = hashlib.sha256(repr(parts).encode())
    files = [path] if path.is_file() else _regular_files(path, skip=skip)
    if files is None:
        return None
    left = MAX_HASHED_BYTES
    for file in files:
        data = _read_at_most(file, left)
        if data is None or len(data) > left:
            return None
        left -= len(data)
        digest.update(str(file.relative_to(path) if file != path else "").encode() + b"\0")
        digest.update(len(data).to_bytes(8, "big") + data)
    return digest.hexdigest()


def _regular_files(
    top: Path, limit: int = 10_000, skip: frozenset[str] = frozenset()
) -> list[Path] | None:
    """Regular files below ``top`` (links neither followed nor listed, directories named in
    ``skip`` left out), sorted; None past ``limit`` files."""
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d not in skip)
        for name in filenames:
            candidate = Path(dirpath) / name
            with contextlib.suppress(OSError):
                if stat.S_ISREG(os.lstat(candidate).st_mode):
                    found.append(candidate)
        if len(found) > limit:
            return None
    return sorted(found)


def _read_at_most(file: Path, budget: int) -> bytes | None:
    """The file's bytes, if it is a regular file (not a link) of at most ``budget`` bytes;
    else None. Opened without following a link; the size is checked before reading."""
    try:
        fd = os.open(file, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > budget:
            return None
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read(min(info.st_size, budget) + 1)  # no buffer past the file
    except OSError:
        return None
    finally:
        os.close(fd)


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
