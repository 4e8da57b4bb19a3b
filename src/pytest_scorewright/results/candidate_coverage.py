"""Line coverage of a candidate's own files in evaluator mode, decided by the parent.

The lines that ran are the candidate's process's claim (child/shared/coverage_probe.py); which
lines are statements is coverage.py's analysis of the candidate's files, made here, where
no candidate code runs. Only claimed lines that are statements count, so a forged claim
reaches 100% at most, and a file the tests never imported counts with none of its lines.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import coverage
from coverage.exceptions import CoverageException

from pytest_scorewright.results.measure import CoverageFigures

#: Most of the candidate's files analysed (the rest are left out of the figure).
MAX_FILES = 500


def candidate_files(candidate: Path, module: str) -> dict[str, Path]:
    """The candidate's Python files by the path a run sees them at, relative to its
    directory: a file candidate is ``<module>.py``."""
    if candidate.is_file():
        return {f"{module}.py": candidate}
    found = sorted(p for p in candidate.rglob("*.py") if p.is_file())[:MAX_FILES]
    return {p.relative_to(candidate).as_posix(): p for p in found}


def parse_ranges(text: str) -> set[int]:
    """``'1-3,7'`` as ``{1, 2, 3, 7}``; anything malformed is no line (it is a claim)."""
    lines: set[int] = set()
    for part in text.split(",")[:100_000]:
        first, _, last = part.partition("-")
        if not first.isdigit() or (last and not last.isdigit()):
            continue
        low, high = int(first), int(last or first)
        if 0 < low <= high <= low + 1_000_000:
            lines.update(range(low, high + 1))
    return lines


def figures(
    files: Mapping[str, Path], claims: Iterable[Mapping[str, str]]
) -> CoverageFigures | None:
    """Statements of ``files`` that some run claims ran, over all their statements (every
    claim counts: the visible and held-out runs of one candidate); None without files."""
    ran: dict[str, set[int]] = {}
    for claim in claims:
        for name, text in claim.items():
            if name in files:
                ran.setdefault(name, set()).update(parse_ranges(text))
    analyser = coverage.Coverage(data_file=None, config_file=False)
    data = analyser.get_data()
    data.add_lines({str(files[name]): sorted(lines) for name, lines in ran.items()})
    covered = statements = 0
    for path in files.values():
        try:
            _, found, _, missing, _ = analyser.analysis2(str(path))
        except (CoverageException, SyntaxError, OSError, UnicodeDecodeError):
            continue  # not Python it can parse: no statements of its own to count
        statements += len(found)
        covered += len(found) - len(missing)
    if not files:
        return None
    return CoverageFigures(covered, statements, None, None)
