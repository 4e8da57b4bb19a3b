"""The child's work directory: a fresh copy of the candidate and of the trusted tests.

Layout (one per run)::

    <root>/candidate/   the candidate's files (a package candidate as <module>/; a src layout
                        keeps its src/); appended to sys.path, never an ancestor of tests
    <root>/tests/       a fresh copy of the trusted tests (visible or held-out)
    <root>/home/        private HOME and TMPDIR (of the test process, with isolation by process)
    <root>/chome/       the candidate's own HOME, with isolation by process
    <root>/shared/      TMPDIR of both processes with isolation by process (tmp_path lives here,
                        so a file a test makes can be handed to the candidate)

Copies never follow a symlink and never copy a special file, so a candidate directory that
links to /etc or to the held-out tests brings nothing with it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from pytest_scorewright.errors import ConfigError
from pytest_scorewright.kernel.procfs import start_ticks
from pytest_scorewright.sandbox import subids


class WorkDirKeeper(Protocol):
    """Told of each work dir made and removed (sandbox/janitor.py's Janitor)."""

    def made(self, root: Path, uid: int | None = None) -> None: ...

    def removed(self, root: Path) -> None: ...


#: Files a candidate might use to steer pytest or the interpreter. Never read; their presence
#: is reported.
CONFIG_NAMES = frozenset(
    {
        "conftest.py",
        "pytest.ini",
        ".pytest.ini",
        "pyproject.toml",
        "setup.cfg",
        "tox.ini",
        "sitecustomize.py",
        "usercustomize.py",
        "pytest.py",
        "_pytest",
        "pluggy",
        "py.py",
    }
)

#: Compiled code in a candidate is never copied into a run: the static scan cannot read it,
#: and its code objects could carry any file name, so the monitor could not tell whose it
#: is. (Sources compile afresh; a run writes no bytecode.) The scan reports each one.
NOT_COPIED_SUFFIXES = frozenset({".pyc", ".pyo", ".so", ".pyd"})

MAX_FILES = 5000
MAX_BYTES = 128 * 1024 * 1024


@dataclass
class CopyReport:
    files: int = 0
    bytes: int = 0
    skipped: list[str] = field(default_factory=list)
    config_files: list[str] = field(default_factory=list)


def copy_tree(
    source: Path, dest: Path, report: CopyReport, *, trusted: bool, top: Path | None = None
) -> None:
    """Copy regular files and directories from ``source`` into ``dest`` without following
    symlinks; special files and links are skipped and listed in ``report``."""
    dest.mkdir(parents=True, exist_ok=True)
    for rel, path, is_dir in walk_tree(source, report, trusted=trusted, top=top):
        if is_dir:
            (dest / rel).mkdir(exist_ok=True)
        else:
            shutil.copyfile(path, dest / rel, follow_symlinks=False)


def walk_tree(
    source: Path, report: CopyReport, *, trusted: bool, top: Path | None = None
) -> Iterator[tuple[str, str, bool]]:
    """The directories and regular files below ``source`` (``(path relative to it, path,
    is a directory)``, a directory before what it holds), without following symlinks:
    special files and links are skipped and listed in ``report``, and past
    :data:`MAX_FILES` files or :data:`MAX_BYTES` bytes it raises ConfigError. The rules of
    every copy of a tree, here or to an executor's worker (fanout/content.py)."""
    top = top or source
    for entry in sorted(os.scandir(source), key=lambda e: e.name):
        rel = os.path.relpath(entry.path, top)
        st = entry.stat(follow_symlinks=False)
        if not trusted and (entry.name in CONFIG_NAMES or entry.name.endswith(".pth")):
            report.config_files.append(rel)
        if stat.S_ISDIR(st.st_mode):
            if entry.name in ("__pycache__", ".git"):
                continue
            yield entry.name, entry.path, True
            for below, path, is_dir in walk_tree(
                Path(entry.path), report, trusted=trusted, top=top
            ):
                yield os.path.join(entry.name, below), path, is_dir
        elif stat.S_ISREG(st.st_mode):
            if not trusted and os.path.splitext(entry.name)[1] in NOT_COPIED_SUFFIXES:
                report.skipped.append(rel)
                continue
            report.files += 1
            report.bytes += st.st_size
            if report.files > MAX_FILES or report.bytes > MAX_BYTES:
                raise ConfigError(
                    f"{top} is too large to score (over {MAX_FILES} files or "
                    f"{MAX_BYTES // 2**20} MiB); point at the candidate's own directory"
                )
            yield entry.name, entry.path, False
        else:
            report.skipped.append(rel)


def require_dir(path: str | os.PathLike[str], what: str) -> Path:
    p = Path(path)
    if not p.exists():
        raise ConfigError(f"{what} {os.fspath(p)!r} does not exist; check the path")
    if not p.is_dir():
        raise ConfigError(f"{what} {os.fspath(p)!r} is not a directory; give the directory")
    return p.resolve()


@dataclass
class Workspace:
    root: Path
    candidate: Path
    tests: Path
    home: Path
    report: CopyReport
    #: The sandbox uid the run's own files were handed to, if any (sandbox/plan.py).
    uid: int | None = None
    #: Told once the work dir is gone (the janitor of a caller without a warm parent).
    on_removed: Callable[[Path], None] | None = None

    @property
    def chome(self) -> Path:
        return self.root / "chome"

    @property
    def shared(self) -> Path:
        return self.root / "shared"

    @classmethod
    def create(
        cls,
        candidate: Path,
        module: str,
        tests: Path,
        base: Path | None = None,
        support: Sequence[Path] = (),
        janitor: WorkDirKeeper | None = None,
    ) -> Workspace:
        root = owned_tempdir("scorewright-", base)
        if janitor is not None:  # before anything is copied in
            janitor.made(root)
        ws = cls(root, root / "candidate", root / "tests", root / "home", CopyReport())
        if janitor is not None:
            ws.on_removed = janitor.removed
        for private in (ws.home, ws.chome, ws.shared):
            private.mkdir()
        if candidate.is_dir() and (candidate / "__init__.py").is_file():
            # A package itself (``mylib/``): it is imported as ``<module>``.
            ws.candidate.mkdir()
            copy_tree(candidate, ws.candidate / module, ws.report, trusted=False)
        elif candidate.is_dir():
            copy_tree(candidate, ws.candidate, ws.report, trusted=False)
        else:
            ws.candidate.mkdir()
            shutil.copyfile(candidate, ws.candidate / f"{module}.py")
        for extra in support:  # trusted files the program needs; copied last, so they win
            if extra.is_dir():
                copy_tree(extra, ws.candidate / extra.name, CopyReport(), trusted=True)
            else:
                shutil.copyfile(extra, ws.candidate / extra.name)
        copy_tree(tests, ws.tests, CopyReport(), trusted=True)
        return ws

    def import_paths(self, module: str) -> list[Path]:
        """What goes on the run's ``sys.path`` for the tests to import ``module``: the
        candidate's directory, and its ``src/`` where the module is there (a src layout)."""
        paths = [self.candidate]
        src = self.candidate / "src"
        if not _has_module(self.candidate, module) and _has_module(src, module):
            paths.append(src)
        return paths

    def seen_at(self, root: Path) -> Workspace:
        """The same work dir as the child sees it when it is mounted at ``root``."""
        return Workspace(
            root, root / "candidate", root / "tests", root / "home", self.report, self.uid
        )

    def remove(self) -> None:
        remove_work_dir(self.root, self.uid)
        if self.on_removed is not None:
            self.on_removed(self.root)


#: A work dir's owner: the pid and start time of the process that made it (leftovers.py).
OWNER_FILE = ".owner"


def owned_tempdir(prefix: str, base: str | Path | None) -> Path:
    """A new private directory in ``base`` (the temp dir by default) whose very name says
    which process made it (``<prefix><pid>.<start ticks>-XXXXXXXX``), then ``.owner`` says it
    again: a caller killed between the two (a whole process group at once, under load:
    CI once found two such dirs the sweep could not attribute) still leaves nothing that a
    later Evaluator cannot remove (leftovers.py)."""
    owner = f"{os.getpid()} {start_ticks(os.getpid()) or 0}"
    root = Path(tempfile.mkdtemp(prefix=f"{prefix}{owner.replace(' ', '.')}-", dir=base))
    (root / OWNER_FILE).write_text(f"{owner}\n", encoding="ascii")
    return root


@contextlib.contextmanager
def private_tempdir(prefix: str, base: str | Path | None = None) -> Iterator[Path]:
    """As ``tempfile.TemporaryDirectory``, made by :func:`owned_tempdir`: what a caller killed
    inside it leaves (its ``finally`` never runs) is still its own to the next sweep."""
    root = owned_tempdir(prefix, base)
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def remove_work_dir(root: Path, uid: int | None) -> None:
    """Remove a run's work dir (``uid``: the sandbox uid its files were handed to)."""
    shutil.rmtree(root, ignore_errors=True)
    if os.path.lexists(root):
        # A run of the caller's uid may have made its directories read-only (or
        # unreadable), which stops the caller's rmtree: give them back their owner's
        # permissions, then remove.
        _open_for_removal(str(root))
        shutil.rmtree(root, ignore_errors=True)
    if os.path.lexists(root) and uid is not None and os.geteuid() != 0:
        # Files of the run's own uid (subordinate ids) its job could not hand back.
        subids.remove_left(str(root))


def _open_for_removal(top: str) -> None:
    """``chmod u+rwx`` every directory below ``top`` that this process owns (never following
    a link), so that its entries can be listed and removed."""
    todo = [top]
    while todo:
        directory = todo.pop()
        try:
            if os.lstat(directory).st_uid == os.geteuid():
                os.chmod(directory, 0o700)
            with os.scandir(directory) as entries:
                todo.extend(e.path for e in entries if e.is_dir(follow_symlinks=False))
        except OSError:
            continue


def _has_module(directory: Path, module: str) -> bool:
    return (directory / module).is_dir() or (directory / f"{module}.py").is_file()


def require_candidate(path: str | os.PathLike[str], what: str) -> Path:
    p = Path(path)
    if isinstance(path, str) and ("\n" in path or "\0" in path):
        # Source text given where a path goes: say so, never a traceback of os.stat's.
        raise ConfigError(
            f"{what} looks like source text, not a path; pass source to score_source()"
        )
    try:
        found = p.exists()
    except (OSError, ValueError) as exc:
        shown = os.fspath(p)[:80]
        raise ConfigError(f"{what} {shown!r} cannot be a path ({exc}); check the path") from None
    if not found:
        raise ConfigError(f"{what} {os.fspath(p)!r} does not exist; check the path")
    if p.is_file() and p.suffix != ".py":
        raise ConfigError(f"{what} {os.fspath(p)!r} is not a .py file or a directory")
    if not p.is_file() and not p.is_dir():
        raise ConfigError(f"{what} {os.fspath(p)!r} is not a regular file or a directory")
    return p.resolve()


def require_support(path: str | os.PathLike[str]) -> Path:
    p = Path(path)
    if not p.exists():
        raise ConfigError(f"support file {os.fspath(p)!r} does not exist; check the path")
    return p.resolve()
