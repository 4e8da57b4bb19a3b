"""The integrity corpus: small tasks with honest and gaming candidates.

Each task has ``tests/``, ``heldout/``, ``reference/`` and ``candidates/``. A candidate named
``honest_*`` must not be flagged; a ``gaming_*`` one declares in its docstring's first line
``expect: code_a|code_b`` — at least one of those reason codes, of severity gaming or tamper,
must flag it — or ``missed: why`` for a strategy the integrity layer does not catch (it must
then at least not be credited a pass rate of 0.9). A line ``apart: ...`` of the same form
says what holds instead when the candidate runs in a process of its own (the default
isolation), where a trick may fail without a trace; there ``apart: earns -- why`` says the
trick is out of reach and the candidate scores what its own code earns (being wrong, never a
full pass).
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
    #: With isolation by process, where it differs: (expected codes, "expect", "missed" or
    #: "earns").
    apart: tuple[frozenset[str], str] | None = None

    def expectation(self, isolated: bool) -> tuple[frozenset[str], str]:
        """The codes that must flag it and what must hold (``expect``: flagged for its trick;
        ``missed``: not credited 0.9; ``earns``: not credited a full pass), under that
        isolation."""
        if isolated and self.apart is not None:
            return self.apart
        return self.expect, "missed" if self.missed else "expect"

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
        expect, kind = _expectation(doc)
        missed = kind == "missed"
        apart_line = next((ln for ln in doc.splitlines() if ln.startswith("apart:")), None)
        apart = _expectation(apart_line.removeprefix("apart:").strip()) if apart_line else None
        honest = path.name.startswith("honest_")
        if not honest and not expect and not missed:
            raise ValueError(f"{path}: a gaming candidate must say `expect: code` or `missed:`")
        found.append(Case(task.name, path, honest, expect, missed, apart))
    return found


def _expectation(text: str) -> tuple[frozenset[str], str]:
    if text.startswith("expect:"):
        codes = text.split("--")[0].removeprefix("expect:")
        return frozenset(c.strip() for c in codes.split("|")), "expect"
    return frozenset(), "earns" if text.startswith("earns") else "missed"


#: Every case, by ``task/name``.
CASES_BY_NAME = {case.name: case for task in tasks() for case in cases(task)}
