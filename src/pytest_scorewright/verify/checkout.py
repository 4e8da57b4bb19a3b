"""The verifier's workspace: the repository at its base commit, with no git history, the
task's trusted tests, and each candidate's tree. Built with ``git archive`` (the base's files
only: the future history and the git objects never reach a run) and ``git apply`` with no
repository around it (a patch cannot reach past the tree it is applied to)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
from pathlib import Path

from pytest_scorewright.errors import ConfigError

#: A git command must never find a repository above the workspace (``git apply`` would then
#: apply relative to that repository's root).
_NO_REPO = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0"}


def _git(
    args: list[str], *, cwd: Path, stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, **_NO_REPO, "GIT_CEILING_DIRECTORIES": str(cwd.parent)}
    for leaked in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY"):
        env.pop(leaked, None)
    git = shutil.which("git")
    if git is None:
        raise ConfigError("git is not installed; install it to verify repository tasks")
    return subprocess.run(  # noqa: S603 (git with arguments we build, no shell)
        [git, *args], cwd=cwd, input=stdin, capture_output=True, check=False, env=env
    )


def export_base(repo: Path, base: str, dest: Path) -> None:
    """The files of ``base`` into ``dest`` (``git archive``): no ``.git``, no later history."""
    proc = _git(["archive", "--format=tar", base], cwd=repo)
    if proc.returncode != 0:
        first = proc.stderr.decode(errors="replace").strip().splitlines()[:1]
        raise ConfigError(
            f"commit {base!r} cannot be read from {repo} ({first[0] if first else 'git failed'});"
            " check --base"
        )
    dest.mkdir(parents=True)
    archive = dest.parent / f".{dest.name}.tar"
    archive.write_bytes(proc.stdout)
    with tarfile.open(archive) as tar:
        extract_safely(tar, dest)
    archive.unlink()


def extract_safely(tar: tarfile.TarFile, dest: Path) -> None:
    """``tar`` unpacked into ``dest`` with the ``data`` extraction filter, or, on a Python
    without filters (before 3.11.4 and 3.10.12), with what that filter refuses left out:
    absolute names, names or links leading out of ``dest``, devices."""
    if hasattr(tarfile, "data_filter"):
        tar.extractall(dest, filter="data")
        return
    root = dest.resolve()
    kept = []
    for member in tar.getmembers():
        target = (root / member.name).resolve()
        if member.name.startswith("/") or not target.is_relative_to(root):
            continue
        if member.isdev() or member.isfifo():
            continue
        if member.issym() or member.islnk():
            link = Path(member.linkname)
            base = target.parent if member.issym() else root
            if link.is_absolute() or not (base / link).resolve().is_relative_to(root):
                continue
        kept.append(member)
    tar.extractall(dest, members=kept)  # noqa: S202 - every member checked above


def apply_patch(tree: Path, patch: bytes) -> str | None:
    """Apply a unified diff to ``tree``; None, or why it does not apply (one line)."""
    if not patch.strip():
        return None
    proc = _git(["apply", "--whitespace=nowarn", "-"], cwd=tree, stdin=patch)
    if proc.returncode != 0:
        lines = proc.stderr.decode(errors="replace").strip().splitlines()
        return lines[0][:300] if lines else f"git apply exited {proc.returncode}"
    drop_git_dirs(tree)
    return None


def drop_git_dirs(tree: Path) -> None:
    """No ``.git`` anywhere in a candidate's tree: a patch or a tree could carry one with
    the repository's objects in it."""
    for top, dirs, files in os.walk(tree):
        for name in [*dirs, *files]:
            if name == ".git":
                path = Path(top) / name
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path)
                else:
                    path.unlink()
        dirs[:] = [d for d in dirs if d != ".git"]


def copy_tree(source: Path, dest: Path) -> None:
    """A tree copied without following links and without ``.git``."""
    shutil.copytree(
        source, dest, symlinks=True, ignore=shutil.ignore_patterns(".git", "__pycache__")
    )


def keep_listed_test_files(tests: Path, files: set[str]) -> None:
    """Remove the test files of ``tests`` that hold none of the listed tests (as SWE-bench
    runs only the test files of a task), keeping conftest files, helpers and data."""
    for top, _dirs, names in os.walk(tests):
        for name in names:
            path = Path(top) / name
            rel = path.relative_to(tests).as_posix()
            test_file = name.startswith("test_") or name.endswith("_test.py")
            if test_file and name.endswith(".py") and rel not in files:
                path.unlink()


def find_tests_dir(base: Path, given: str | None) -> str:
    if given is not None:
        if not (base / given).is_dir():
            raise ConfigError(f"--tests-dir {given!r} is not a directory at the base commit")
        return given
    for name in ("tests", "test", "testing"):
        if (base / name).is_dir():
            return name
    raise ConfigError("the base commit has no tests/ or test/ directory; give --tests-dir")


def find_modules(base: Path, tests_dir: str) -> tuple[str, ...]:
    """The top-level packages of the base: ``src/``'s, or the root's (tests, docs and
    build scripts left out)."""
    root = base / "src" if (base / "src").is_dir() else base
    skip = {tests_dir, "docs", "doc", "examples", "benchmarks", "build", "dist", "tools"}
    found = sorted(
        p.name
        for p in root.iterdir()
        if p.is_dir() and (p / "__init__.py").is_file() and p.name not in skip
    )
    if not found:
        found = sorted(
            p.stem
            for p in root.glob("*.py")
            if p.stem.isidentifier()
            and p.stem not in {"setup", "conftest", "noxfile", "fabfile", "tasks"}
        )
    if not found:
        raise ConfigError(f"no package found in {root.name}/ at the base commit; give --module")
    return tuple(found)
