"""The trusted collection: which tests a suite has, learned once, from a run of the reference
(or of a stand-in module), never from a candidate's run."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from pathlib import Path

from pytest_scorewright.errors import ConfigError
from pytest_scorewright.protocol import wire
from pytest_scorewright.protocol.wire import ChildOutcome

#: Stands in for the candidate while the trusted suite is collected without a reference.
STUB = '''"""Collection stub: stands in for the candidate while the trusted suite is collected."""


class _Anything:
    def __call__(self, *args, **kwargs):
        return self

    def __getattr__(self, name):
        return self


def __getattr__(name):
    return _Anything()
'''


def expected_ids(
    tests: Path, observed: ChildOutcome, *, all_heldout: bool, what: str
) -> list[tuple[str, bool]]:
    """The (node id, held out) pairs a ``--collect-only`` run of ``tests`` reported; a
    one-line ConfigError when the suite cannot be collected with ``what``."""
    ids: list[tuple[str, bool]] = []
    problems: list[str] = []
    for _, message in observed.messages:
        kind = message.get("type")
        if kind == wire.COLLECTED:
            ids += zip(message["ids"], message["heldout"], strict=True)
        elif kind == wire.COLLECT_ERROR:
            last = str(message.get("message", "")).strip().splitlines() or [""]
            problems.append(f"{message.get('nodeid')}: {last[-1]}")
        elif kind in (wire.SANDBOX_ERROR, wire.CHILD_ERROR, wire.INTERNAL_ERROR):
            problems.append(str(message.get("reason")))
    if problems:
        raise ConfigError(f"the tests in {tests} could not be collected with {what}: {problems[0]}")
    if observed.timed_out:
        raise ConfigError(f"collecting the tests in {tests} timed out; raise the timeout")
    if not ids:
        raise ConfigError(f"no tests were collected from {tests}; check the directory")
    return [(nodeid, heldout or all_heldout) for nodeid, heldout in ids]


def module_name_mistake(
    suites: Sequence[Path], reference: Path | None, modules: Sequence[str]
) -> str | None:
    """Why a ``.py`` candidate cannot be imported by these tests, if it cannot: it is copied
    in as ``<module>.py``, and where the tests import modules the reference directory
    provides but none of ``modules``, a wrong ``module`` would score every such candidate 0
    (the reference directory, copied whole, still passes). A directory candidate is copied
    whole, like the reference, so this says nothing about it."""
    if reference is None or not reference.is_dir():
        return None
    provided = {p.stem for p in reference.glob("*.py")} | {
        p.name for p in reference.iterdir() if (p / "__init__.py").is_file()
    }
    imported = set().union(*(_imported_names(tests) for tests in suites))
    from_reference = sorted(imported & provided)
    if not from_reference or imported & set(modules):
        return None
    likely = from_reference[0]
    return (
        f"the tests import {', '.join(map(repr, from_reference))} from the reference but never "
        f"{modules[0]!r}, the name a .py candidate is copied in as: every such candidate "
        f"would fail to import; did you mean --module {likely} (module={likely!r})?"
    )


def _imported_names(tests: Path) -> set[str]:
    """The top-level module names the test files import (read, never run)."""
    found: set[str] = set()
    for path in sorted(tests.rglob("*.py")):
        try:
            tree = ast.parse(path.read_bytes())
        except (SyntaxError, ValueError, OSError):
            continue  # the trusted collection reports it
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module.split(".")[0])
    return found
