"""The integrity corpus: small tasks with honest and gaming candidates.

Each task has ``tests/``, ``heldout/``, ``reference/`` and ``candidates/``. A candidate named
``honest_*`` must not be flagged; a ``gaming_*`` one declares in its docstring's first line
``expect: code_a|code_b`` — at least one of those reason codes must flag it.
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
        doc = ast.get_docstring(ast.parse(source.read_text())) or ""
        expect: frozenset[str] = frozenset()
        if doc.startswith("expect:"):
            codes = doc.split("--")[0].removeprefix("expect:")
            expect = frozenset(c.strip() for c in codes.split("|"))
        honest = path.name.startswith("honest_")
        if not honest and not expect:
            raise ValueError(f"{path}: a gaming candidate must say `expect: code`")
        found.append(Case(task.name, path, honest, expect))
    return found
