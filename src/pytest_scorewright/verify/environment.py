"""A repository task's environment: a venv made from the **base** commit's requirements (never
the candidate's), built once per set of requirements and interpreter, and reused.

What goes in: the base's ``requirements*.txt`` (root), its ``pyproject.toml`` dependencies
and the extras or dependency groups named, ``setup.cfg``'s ``install_requires`` and extras,
and pytest-scorewright itself, installed from the running installation. What never goes in:
the repository's own package. Its build script would run with the verifier's privileges, and
the package under test is the candidate's, imported from its tree in every run; so local
paths and editable lines of a requirements file are left out too."""

from __future__ import annotations

import configparser
import contextlib
import fcntl
import hashlib
import importlib.metadata
import json
import platform
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from pytest_scorewright._text import bound_message
from pytest_scorewright.errors import ConfigError
from pytest_scorewright.user_cache import user_cache

#: Set in the environment of a command re-run under a task's interpreter: it is there already.
INSIDE = "SCOREWRIGHT_VERIFY_PYTHON"
#: Where venvs are kept unless the caller names a place (None: this user has no HOME).
DEFAULT_CACHE = user_cache("venvs")
#: Written last into a venv once everything is installed: a venv without it is half-built.
READY = "scorewright-ready.json"
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?")


@dataclass(frozen=True)
class Environment:
    """A venv for a task. Example::

    env = ensure_venv(base_requirements(base_dir, ["test"]), DEFAULT_CACHE)
    env.python, env.reused
    """

    python: Path
    #: The cache key: the requirements, the interpreter and this pytest-scorewright.
    key: str
    #: Whether it was there already (built by an earlier task with the same key).
    reused: bool
    requirements: tuple[str, ...]


def base_requirements(base: Path, extras: Sequence[str] = ()) -> list[str]:
    """The requirements the base commit's files at ``base`` declare, extras included; an
    extra named nowhere is a one-line ConfigError."""
    found: list[str] = []
    for path in sorted(base.glob("requirements*.txt")):
        found += _requirements_file(base, path, set())
    project = _pyproject(base)
    setup_cfg = _setup_cfg(base)
    found += project.get("dependencies", []) + setup_cfg.get("", [])
    wanted, done = list(extras), set()
    name = _normal(str(project.get("name", "")))
    while wanted:
        extra = wanted.pop()
        if extra in done:
            continue
        done.add(extra)
        lists = [table.get(extra) for table in (project.get("extras", {}), setup_cfg)]
        lists.append(project.get("groups", {}).get(extra))
        if all(x is None for x in lists):
            raise ConfigError(
                f"--extra {extra!r} is not an extra or dependency group of the base's "
                "pyproject.toml or setup.cfg; check the name"
            )
        for requirement in (r for x in lists if x for r in x):
            own = _NAME.match(requirement)
            if own and name and _normal(own.group(1)) == name:
                wanted += [e.strip() for e in (own.group(2) or "").split(",") if e.strip()]
            else:
                found.append(requirement)
    return list(dict.fromkeys(r.strip() for r in found if r.strip()))


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirements_file(base: Path, path: Path, seen: set[Path]) -> list[str]:
    """A requirements file's requirement lines, ``-r`` followed inside the base; options,
    local paths and editable installs (they would build a project) left out."""
    path = path.resolve()
    if path in seen or not path.is_relative_to(base.resolve()) or not path.is_file():
        return []
    seen.add(path)
    kept: list[str] = []
    for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
        line = raw.split(" #", 1)[0].strip()
        if line.startswith(("-r ", "--requirement ")):
            kept += _requirements_file(base, path.parent / line.split(None, 1)[1], seen)
        elif line and not line.startswith(("#", "-", ".", "/", "file:")):
            kept.append(line)
    return kept


def _pyproject(base: Path) -> dict[str, Any]:
    """name, dependencies, extras and dependency groups of ``[project]``."""
    path = base / "pyproject.toml"
    if not path.is_file():
        return {}
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # Python 3.10: tomli, a dependency there
        import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"the base's pyproject.toml cannot be read ({exc}); fix it") from None
    table = data.get("project", {})
    groups = {
        name: [r for r in items if isinstance(r, str)]
        for name, items in data.get("dependency-groups", {}).items()
    }
    return {
        "name": table.get("name", ""),
        "dependencies": list(table.get("dependencies", [])),
        "extras": dict(table.get("optional-dependencies", {})),
        "groups": groups,
    }


def _setup_cfg(base: Path) -> dict[str, list[str]]:
    """``install_requires`` (under ``""``) and each extra of ``setup.cfg``."""
    parser = configparser.RawConfigParser()
    try:
        parser.read(base / "setup.cfg", encoding="utf-8")
    except (configparser.Error, UnicodeDecodeError):
        return {}

    def lines(value: str) -> list[str]:
        return [v.strip() for v in value.splitlines() if v.strip() and not v.startswith("#")]

    found = {}
    if parser.has_option("options", "install_requires"):
        found[""] = lines(parser.get("options", "install_requires"))
    if parser.has_section("options.extras_require"):
        found |= {k: lines(v) for k, v in parser.items("options.extras_require")}
    return found


def ensure_venv(
    requirements: Sequence[str], cache: Path, *, timeout_s: float = 900.0
) -> Environment:
    """The venv for ``requirements`` under ``cache``: reused when one with the same key is
    there, else built (``python -m venv`` and ``pip install``), one builder at a time."""
    self_install = _self_install()
    key = _key(requirements, self_install)
    home = cache / key
    cache.mkdir(parents=True, exist_ok=True)
    python = home / "bin" / "python"
    with _locked(cache / f"{key}.lock"):
        if (home / READY).is_file() and python.exists():
            return Environment(python, key, True, tuple(requirements))
        shutil.rmtree(home, ignore_errors=True)  # a half-built one, from a build cut short
        try:
            _build(home, requirements, self_install, timeout_s)
        except BaseException:
            shutil.rmtree(home, ignore_errors=True)
            raise
    return Environment(python, key, False, tuple(requirements))


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _build(home: Path, requirements: Sequence[str], self_install: str, timeout_s: float) -> None:
    python, own_pip = str(home / "bin" / "python"), _pip_from_outside()
    venv = [sys.executable, "-m", "venv", *(["--without-pip"] if own_pip else []), str(home)]
    _run(venv, "creating a venv", timeout_s)
    listed = home / "scorewright-requirements.txt"
    listed.write_text("".join(f"{r}\n" for r in requirements), encoding="utf-8")
    pip = [*own_pip, "--python", python] if own_pip else [python, "-m", "pip"]
    pip += ["install", "-q", "--disable-pip-version-check", self_install, "-r", str(listed)]
    _run(pip, "installing the base's requirements and pytest-scorewright", timeout_s)
    ready = {"requirements": list(requirements), "scorewright": self_install}
    (home / READY).write_text(json.dumps(ready, indent=2) + "\n", encoding="utf-8")


def _pip_from_outside() -> list[str]:
    """This interpreter's pip, where it can install into another interpreter (``--python``,
    pip 22.3 and later); else [] and the venv gets a pip of its own. Nothing installs into a
    venv of ours once it is built, and ensurepip's copy costs ~3 s of CPU per venv."""
    try:
        version = importlib.metadata.version("pip")
    except importlib.metadata.PackageNotFoundError:
        return []
    major_minor = tuple(int(part) for part in re.findall(r"\d+", version)[:2])
    return [sys.executable, "-m", "pip"] if major_minor >= (22, 3) else []


def _run(cmd: list[str], what: str, timeout_s: float) -> None:
    try:
        proc = subprocess.run(  # noqa: S603 (our interpreter, pip, the base's requirements)
            cmd, capture_output=True, text=True, check=False, timeout=timeout_s
        )
    except subprocess.TimeoutExpired:
        raise ConfigError(f"{what} took over {timeout_s:.0f} s; check pip's index") from None
    if proc.returncode != 0:
        last = [line for line in proc.stderr.splitlines() if line.strip()][-1:] or ["no output"]
        raise ConfigError(
            bound_message(
                f"{what} failed ({last[0].strip()}); fix the requirements or pip's "
                "index, or give an environment with --python"
            )
        )


def _self_install() -> str:
    """What pip installs for this pytest-scorewright: its source directory when it runs
    from one (an editable or local install), else the same version from the index."""
    dist = importlib.metadata.distribution("pytest-scorewright")
    direct = dist.read_text("direct_url.json")
    if direct:
        url = json.loads(direct).get("url", "")
        parsed = urlparse(url)
        if parsed.scheme == "file" and Path(unquote(parsed.path)).exists():
            return unquote(parsed.path)
    return f"pytest-scorewright=={dist.version}"


def _key(requirements: Sequence[str], self_install: str) -> str:
    """The cache key: the requirements (sorted), the interpreter, and this
    pytest-scorewright (its source's contents, so an edit of it makes a new venv)."""
    digest = hashlib.sha256()
    source = Path(__file__).resolve().parents[1]
    for path in sorted(source.rglob("*.py")):
        digest.update(path.relative_to(source).as_posix().encode() + b"\0")
        digest.update(path.read_bytes())
    facts = {
        "requirements": sorted(set(requirements)),
        "python": [platform.python_implementation(), sys.version, sys.base_prefix],
        "scorewright": [self_install, digest.hexdigest()],
    }
    return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()[:20]
