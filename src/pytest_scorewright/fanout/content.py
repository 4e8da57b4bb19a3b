"""Files as content: a directory (or one file) packed on the client into one blob keyed by
its hash, and written out again on an executor's worker, so that no worker needs the
client's file system (docs/cluster.md).

The blob is zlib over a plain stream: a header line, then one record an entry (``D`` a
directory, ``F`` a file), each a kind byte, the path's length and bytes, the content's
length and bytes; a directory's record comes before what it holds. The hash is SHA-256 of
the stream, so the same files give the same key on every machine. Packing follows the rules
of every copy of a tree (sandbox/workspace.py): symlinks are never followed, special files
never copied, and past the size bound the packer stops with a one-line error.
"""

from __future__ import annotations

import hashlib
import os
import stat
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

from pytest_scorewright.errors import ConfigError, InfrastructureError
from pytest_scorewright.sandbox.workspace import MAX_BYTES, MAX_FILES, CopyReport, walk_tree

_HEADER = b"scorewright-tree 1\n"
_ENTRY = struct.Struct(">cI")  # kind, path length
_SIZE = struct.Struct(">Q")  # content length
#: The most a tree the size bounds allow can take unpacked: its bytes, and each file's
#: record (paths are at most PATH_MAX long).
TREE_MAX = MAX_BYTES + 2 * MAX_FILES * (_ENTRY.size + 4096 + _SIZE.size)


@dataclass(frozen=True)
class Tree:
    """Files as content, keyed by ``digest`` (SHA-256 of the ``size`` bytes ``blob``
    unpacks to). Its repr names only the key: a tree may hold held-out tests, and an
    executor may log a task's arguments."""

    blob: bytes
    size: int
    digest: str

    def __repr__(self) -> str:
        return f"Tree(sha256:{self.digest[:16]}, {self.size} bytes)"

    def __dask_tokenize__(self) -> str:
        """What Dask keys a task that carries it by: its hash, not its bytes hashed again."""
        return self.digest


class TreeBuilder:
    """Packs files into a :class:`Tree`, entry by entry.

    Example::

        builder = TreeBuilder()
        builder.add("tests", Path("tests"), trusted=True)
        tree = builder.build()
    """

    def __init__(self) -> None:
        self._zip = zlib.compressobj(1)
        self._hash = hashlib.sha256()
        self._size = 0
        self._blob: list[bytes] = []
        self._put(_HEADER)

    def add(
        self, name: str, source: Path, *, trusted: bool, report: CopyReport | None = None
    ) -> CopyReport:
        """Add ``source`` (a file, or a directory and everything below it) as ``name``;
        returns what the copy rules counted and skipped."""
        report = report if report is not None else CopyReport()
        if source.is_dir():
            self._record(b"D", name, b"")
            for rel, path, is_dir in walk_tree(source, report, trusted=trusted):
                if is_dir:
                    self._record(b"D", f"{name}/{rel}", b"")
                else:
                    self._record(b"F", f"{name}/{rel}", _read(path, source))
        else:
            report.files += 1
            self._record(b"F", name, _read(os.fspath(source), source))
        return report

    def build(self) -> Tree:
        self._blob.append(self._zip.flush())
        return Tree(b"".join(self._blob), self._size, self._hash.hexdigest())

    def _record(self, kind: bytes, name: str, content: bytes) -> None:
        path = os.fsencode(name)
        self._put(_ENTRY.pack(kind, len(path)) + path + _SIZE.pack(len(content)))
        self._put(content)

    def _put(self, data: bytes) -> None:
        self._hash.update(data)
        self._size += len(data)
        self._blob.append(self._zip.compress(data))


def _read(path: str, top: Path) -> bytes:
    """A regular file's bytes, read without following a symlink and at most the size bound
    (a file that grows while it is read cannot make the tree larger than the bound)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise ConfigError(f"cannot read {path!r} ({exc.strerror}); check the path") from None
    with open(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ConfigError(f"{path!r} is not a regular file; give a .py file or a directory")
        data = handle.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise ConfigError(
            f"{top} is too large to score (over {MAX_FILES} files or "
            f"{MAX_BYTES // 2**20} MiB); point at the candidate's own directory"
        )
    return data


def unpack(tree: Tree, dest: Path, *, max_size: int, what: str) -> list[str]:
    """Write ``tree``'s files below ``dest`` (an empty directory of ours), after checking
    it is whole and matches its hash; returns the top-level names. A tree that does not
    match, or that names a path outside ``dest``, is refused (InfrastructureError) before
    anything is written."""
    entries = _verified(tree, max_size=max_size, what=what)
    tops: list[str] = []
    # Nothing below ``dest`` is ever a symlink (a tree holds none, and only this writes
    # there), so no path written can lead outside it.
    try:
        for kind, name, content in entries:
            target = dest.joinpath(*name.split("/"))
            if kind == b"D":
                target.mkdir(parents=True, exist_ok=True)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
                with open(os.open(target, flags, 0o644), "wb") as handle:
                    handle.write(content)
            if "/" not in name:
                tops.append(name)
    except OSError as exc:
        raise InfrastructureError(f"{what} {tree!r} could not be written out: {exc}") from None
    return tops


def _verified(tree: Tree, *, max_size: int, what: str) -> list[tuple[bytes, str, bytes]]:
    refused = f"{what} {tree!r} was refused"
    if tree.size > max_size:
        raise InfrastructureError(f"{refused}: larger than {max_size} bytes unpacked")
    inflate = zlib.decompressobj()
    try:
        stream = inflate.decompress(tree.blob, tree.size + 1)
    except zlib.error as exc:
        raise InfrastructureError(f"{refused}: it does not unpack ({exc})") from None
    if len(stream) != tree.size or not inflate.eof or inflate.unconsumed_tail:
        raise InfrastructureError(f"{refused}: its size is not the size it was sent with")
    if hashlib.sha256(stream).hexdigest() != tree.digest:
        raise InfrastructureError(f"{refused}: its content does not match its hash")
    if not stream.startswith(_HEADER):
        raise InfrastructureError(f"{refused}: it is not a tree of this version")
    entries = []
    at = len(_HEADER)
    while at < len(stream):
        if at + _ENTRY.size > len(stream):
            raise InfrastructureError(f"{refused}: it ends inside an entry")
        kind, length = _ENTRY.unpack_from(stream, at)
        at += _ENTRY.size
        raw = stream[at : at + length]
        at += length
        if kind not in (b"D", b"F") or len(raw) != length or at + _SIZE.size > len(stream):
            raise InfrastructureError(f"{refused}: it ends inside an entry")
        (size,) = _SIZE.unpack_from(stream, at)
        at += _SIZE.size
        content = stream[at : at + size]
        at += size
        if len(content) != size:
            raise InfrastructureError(f"{refused}: it ends inside an entry")
        name = os.fsdecode(raw)
        parts = name.split("/")
        if any(p in ("", ".", "..") or "\0" in p for p in parts):
            raise InfrastructureError(f"{refused}: it names a path outside its directory")
        entries.append((kind, name, content))
    return entries
