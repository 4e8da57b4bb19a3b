"""The plugin's settings: command line, then environment, then ini (as pytest-timeout does).

Help texts are written once and shared by flag and ini key.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

OUT_DESC = "Write a ScoreResult JSON file to this path, atomically"
CTRF_DESC = "Write a CTRF JSON test report to this path, atomically"
COV_DESC = "Measure line coverage of this source, a package name or a path (repeatable)"
COV_BRANCH_DESC = "Also measure branch coverage of the --scorewright-cov sources"

OUT_ENV = "SCOREWRIGHT_OUT"
CTRF_ENV = "SCOREWRIGHT_CTRF"
COV_ENV = "SCOREWRIGHT_COV"
COV_BRANCH_ENV = "SCOREWRIGHT_COV_BRANCH"

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("scorewright", "Scorewright: score the run as a fitness function")
    group.addoption(
        "--scorewright-out", dest="scorewright_out", metavar="PATH", default=None, help=OUT_DESC
    )
    group.addoption(
        "--scorewright-ctrf", dest="scorewright_ctrf", metavar="PATH", default=None, help=CTRF_DESC
    )
    group.addoption(
        "--scorewright-cov",
        dest="scorewright_cov",
        action="append",
        metavar="SOURCE",
        default=None,
        help=COV_DESC,
    )
    group.addoption(
        "--scorewright-cov-branch",
        dest="scorewright_cov_branch",
        action="store_true",
        default=None,
        help=COV_BRANCH_DESC,
    )
    parser.addini("scorewright_out", OUT_DESC, type="string", default="")
    parser.addini("scorewright_ctrf", CTRF_DESC, type="string", default="")
    parser.addini("scorewright_cov", COV_DESC, type="linelist", default=[])
    parser.addini("scorewright_cov_branch", COV_BRANCH_DESC, type="bool", default=False)


@dataclass(frozen=True)
class PluginSettings:
    out: Path | None
    ctrf: Path | None
    cov_sources: tuple[str, ...]
    cov_branch: bool

    @property
    def active(self) -> bool:
        return self.out is not None or self.ctrf is not None or bool(self.cov_sources)

    @classmethod
    def from_config(cls, config: pytest.Config, namespace: Any = None) -> PluginSettings:
        """Resolve settings; ``namespace`` is the early argument namespace before pytest has
        filled ``config.option`` (in ``pytest_load_initial_conftests``)."""
        ns = namespace if namespace is not None else config.option
        return cls(
            out=_path(getattr(ns, "scorewright_out", None), config, "out", OUT_ENV, "fitness.json"),
            ctrf=_path(
                getattr(ns, "scorewright_ctrf", None), config, "ctrf", CTRF_ENV, "ctrf.json"
            ),
            cov_sources=_cov(getattr(ns, "scorewright_cov", None), config),
            cov_branch=_branch(getattr(ns, "scorewright_cov_branch", None), config),
        )


def _path(cli: str | None, config: pytest.Config, name: str, env: str, example: str) -> Path | None:
    for source, value in (
        (f"--scorewright-{name}", cli),
        (f"${env}", os.environ.get(env)),
        (f"ini scorewright_{name}", str(config.getini(f"scorewright_{name}")) or None),
    ):
        if value is None:
            continue
        if not value.strip():
            raise pytest.UsageError(f"{source} is empty: give a file path such as {example}")
        return Path(value)
    return None


def _cov(cli: Sequence[str] | None, config: pytest.Config) -> tuple[str, ...]:
    if cli:
        values, source = list(cli), "--scorewright-cov"
    elif os.environ.get(COV_ENV) is not None:
        values, source = os.environ[COV_ENV].split(","), f"${COV_ENV}"
    else:
        values, source = list(config.getini("scorewright_cov")), "ini scorewright_cov"
    cleaned = tuple(v.strip() for v in values)
    if any(not v for v in cleaned):
        raise pytest.UsageError(
            f"{source} has an empty source: give a package name or a path such as src/mypkg"
        )
    return cleaned


def _branch(cli: bool | None, config: pytest.Config) -> bool:
    if cli:
        return True
    env = os.environ.get(COV_BRANCH_ENV)
    if env is not None:
        word = env.strip().lower()
        if word in _TRUE:
            return True
        if word in _FALSE:
            return False
        raise pytest.UsageError(f"${COV_BRANCH_ENV}={env!r} is not a boolean: use 1 or 0")
    return bool(config.getini("scorewright_cov_branch"))
