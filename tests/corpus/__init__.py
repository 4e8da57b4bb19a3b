"""The integrity corpus: small tasks with honest and gaming candidates.

Each task has ``tests/``, ``heldout/``, ``reference/`` and ``candidates/``. A candidate named
``honest_*`` must not be flagged; a ``gaming_*`` one declares in its docstring's first line
``expect: code_a|code_b`` — at least one of those reason codes, of severity gaming or tamper,
must flag it — or ``missed: why`` for a strategy the integrity layer does not catch (it must
then at least not be credited a pass rate of 0.9).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Case:
    task: str
    path: Path
    honest: bool
    expect: frozenset[str]
    missed: bool = False

    @property
    def name(self) -> str:
        return f"{self.task}/{self.path.stem}"


def tasks() -> list[Path]:
    return sorted(p for p in ROOT.iterdir() if (p / "candidates").is_dir())


def cases(task: Path) -> list[Case]:
    found = []
    for path in sorted((task / "candidates").iterdir()):
        source = path / "solution.py" if path.is_dir() else path
        if source.suffix != ".py":
            continue
        doc = ast.get_docstring(ast.parse(source.read_bytes())) or ""
        expect: frozenset[str] = frozenset()
        if doc.startswith("expect:"):
            codes = doc.split("--")[0].removeprefix("expect:")
            expect = frozenset(c.strip() for c in codes.split("|"))
        honest = path.name.startswith("honest_")
        missed = doc.startswith("missed:")
        if not honest and not expect and not missed:
            raise ValueError(f"{path}: a gaming candidate must say `expect: code` or `missed:`")
        found.append(Case(task.name, path, honest, expect, missed))
    return found


#: Every case, by ``task/name``.
CASES_BY_NAME = {case.name: case for task in tasks() for case in cases(task)}
