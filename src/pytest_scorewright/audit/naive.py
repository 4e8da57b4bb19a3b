"""A candidate scored the way hand-written evaluators score it: one ``python -m pytest`` in a
subprocess on a temporary copy (the candidate beside the tests, on ``PYTHONPATH``), credited
by its exit status, or by the pass rate read from the JUnit XML it wrote (from pytest's
summary line where it wrote none). Nothing here is protected: that is the point."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pytest_scorewright.sandbox.workspace import private_tempdir

#: The whole pytest run's limit: a candidate that hangs scores 0.
TIMEOUT_S = 120.0
#: One test's limit (pytest-timeout, as careful evaluators set it): a strategy that makes
#: one test hang loses that test, not the whole run.
TEST_TIMEOUT_S = 10.0
_COUNT = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed)\b")


@dataclass(frozen=True)
class NaiveScore:
    exit_status: int | None
    #: passed / (passed + failed + errors), from JUnit XML or the summary line; None when
    #: neither says (no tests counted).
    pass_rate: float | None
    source: str

    @property
    def exit_zero(self) -> bool:
        return self.exit_status == 0

    def to_dict(self) -> dict[str, object]:
        return {
            "exit_status": self.exit_status,
            "pass_rate": self.pass_rate,
            "source": self.source,
        }


def naive_score(
    candidate: Path,
    tests: Path,
    heldout: Path | None,
    *,
    ini: Mapping[str, str] | None = None,
    timeout_s: float = TIMEOUT_S,
) -> NaiveScore:
    """Score ``candidate`` (a directory of modules) as a plain pytest evaluator would: with
    the plugins installed here autoloaded, and the suite's ini options."""
    with private_tempdir("scorewright-naive-") as tmp:
        work = Path(tmp)
        shutil.copytree(candidate, work, dirs_exist_ok=True)
        targets = []
        for name, suite in (("tests", tests), ("heldout", heldout)):
            if suite is not None:
                shutil.copytree(suite, work / f"_audit_{name}", dirs_exist_ok=True)
                targets.append(f"_audit_{name}")
        junit = work / "_audit_junit.xml"
        options = [arg for k, v in (ini or {}).items() for arg in ("-o", f"{k}={v}")]
        command = [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            f"--rootdir={work}",
            f"--junitxml={junit}",
            f"--timeout={TEST_TIMEOUT_S:g}",
            *options,
            *targets,
        ]
        env = {**os.environ, "PYTHONPATH": str(work)}
        env.pop("PYTEST_ADDOPTS", None)
        try:
            proc = subprocess.run(  # noqa: S603 - pytest, with this interpreter
                command,
                cwd=work,
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return NaiveScore(None, 0.0, "timed out")
        from_xml = _junit_rate(junit)
        if from_xml is not None:
            return NaiveScore(proc.returncode, from_xml, "junit")
        return NaiveScore(proc.returncode, summary_rate(proc.stdout), "summary line")


def _junit_rate(path: Path) -> float | None:
    try:
        # Written by the pytest run just now (or forged by the candidate: read as data).
        root = ET.parse(path).getroot()  # noqa: S314
    except (OSError, ET.ParseError):
        return None
    passed = failed = 0
    for case in root.iter("testcase"):
        tags = {child.tag for child in case}
        if "skipped" in tags:
            continue
        if tags & {"failure", "error"}:
            failed += 1
        else:
            passed += 1
    return passed / (passed + failed) if passed + failed else None


def summary_rate(output: str) -> float | None:
    """passed / (passed + failed + errors) from the last line of pytest's output that counts
    tests, as an evaluator that greps it reads it."""
    for line in reversed(output.splitlines()):
        counts = {kind.rstrip("s"): int(n) for n, kind in _COUNT.findall(line)}
        if counts:
            passed = counts.get("passed", 0)
            total = passed + counts.get("failed", 0) + counts.get("error", 0)
            return passed / total if total else None
    return None
