"""Real libraries for the benchmarks: pinned PyPI sdists, downloaded once, and plain pytest's
outcomes read from its JUnit XML. Shared by plugin_overhead.py, real_code.py and
real_suites.py."""

from __future__ import annotations

import subprocess
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

from _pytest.junitxml import mangle_test_address

from pytest_scorewright.verify.checkout import extract_safely


def download(specs: Sequence[str], cache: Path) -> str | None:
    """Download the sdists ``specs`` (``name==version``) with pip and unpack them into
    ``cache``; None, or why not (one line, naming the fix)."""
    cache.mkdir(parents=True, exist_ok=True)
    print(f"fetching {' '.join(specs)} into {cache} ...", file=sys.stderr, flush=True)
    with tempfile.TemporaryDirectory(dir=cache, prefix=".download-") as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:"]
        try:
            proc = subprocess.run(
                [*cmd, *specs, "-d", tmp], capture_output=True, text=True, check=False, timeout=600
            )
        except subprocess.TimeoutExpired:
            return f"pip download of {' '.join(specs)} took over 600 s; check the network"
        if proc.returncode != 0:
            return (
                f"pip download of {' '.join(specs)} failed (exit {proc.returncode}); make pip "
                f"able to reach PyPI (network, proxy, index-url), or unpack the sdists into "
                f"{cache} by hand"
            )
        for archive in sorted(Path(tmp).glob("*.tar.gz")):
            with tarfile.open(archive) as tar:
                extract_safely(tar, cache)
    return None


def read_junit(path: Path) -> dict[tuple[str, str], str]:
    """(classname, name) -> failed, error, skipped or passed, per JUnit testcase (a name
    given twice raises ValueError: the outcomes could not be told apart)."""
    # The XML was written a moment ago by our own pytest run; it is not untrusted input.
    root = ET.parse(path).getroot()  # noqa: S314
    cases: dict[tuple[str, str], str] = {}
    for case in root.iter("testcase"):
        key = (case.get("classname", ""), case.get("name", ""))
        tags = {child.tag for child in case}
        category = next(
            (
                c
                for t, c in (("failure", "failed"), ("error", "error"), ("skipped", "skipped"))
                if t in tags
            ),
            "passed",
        )
        if key in cases:
            raise ValueError(f"JUnit XML has two testcases named {key!r}; cannot compare")
        cases[key] = category
    return cases


def junit_key(nodeid: str) -> tuple[str, str]:
    """pytest's own nodeid -> (classname, name) mapping, so the keys match exactly."""
    names = mangle_test_address(nodeid)
    return ".".join(names[:-1]), names[-1]
