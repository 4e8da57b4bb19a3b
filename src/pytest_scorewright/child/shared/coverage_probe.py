"""Which lines of the candidate's own files run, measured where its code runs: in the test
process with the candidate in process, in the candidate's own process with it apart.

coverage.py's public API, in memory (no data file), limited to the candidate's directory.
What it measures is the candidate's to change (it runs in the same process), so the parent
takes it as a claim: it counts only lines that are statements of the candidate's files as
the parent itself parses them (results/candidate_coverage.py), so a forged claim can reach
100% and no further.
"""

from __future__ import annotations

import os
import sys
from typing import Any

#: Most files of the candidate whose lines are sent, and most bytes of them (the rest are
#: not: a message must fit in one frame, protocol/channel.py).
MAX_FILES = 500
MAX_BYTES = 128 * 1024


def start(directory: str) -> Any:
    """A coverage.py measurement of ``directory``'s files, started; None where coverage.py
    cannot start here (the result then has no coverage signal)."""
    try:
        import coverage

        cov = coverage.Coverage(
            data_file=None, include=[os.path.join(directory, "*")], config_file=False
        )
        if sys.version_info >= (3, 12) and not os.environ.get("COVERAGE_CORE"):
            cov.set_option("run:core", "sysmon")  # PEP 669 costs less than a trace function
        cov.start()
        return cov
    except Exception:
        return None


def executed(cov: Any, directory: str) -> tuple[list[str], list[str]]:
    """The files under ``directory`` that ran (relative paths) and each one's lines that
    ran, as ``'1-3,7'`` ranges; empty if nothing can be read."""
    try:
        cov.stop()
        data = cov.get_data()
        files, lines, size = [], [], 0
        for path in sorted(data.measured_files())[:MAX_FILES]:
            relative = os.path.relpath(path, directory)
            ran = ranges(sorted(data.lines(path) or ()))
            size += len(relative) + len(ran)
            if relative.startswith("..") or size > MAX_BYTES:
                continue
            files.append(relative)
            lines.append(ran)
        return files, lines
    except Exception:
        return [], []


def ranges(numbers: list[int]) -> str:
    """``[1, 2, 3, 7]`` as ``'1-3,7'``: a few bytes for a long file's lines."""
    parts: list[str] = []
    start = previous = None
    for n in numbers:
        if previous is not None and n == previous + 1:
            previous = n
            continue
        if start is not None:
            parts.append(f"{start}-{previous}" if previous != start else str(start))
        start = previous = n
    if start is not None:
        parts.append(f"{start}-{previous}" if previous != start else str(start))
    return ",".join(parts)
