"""The table of reason codes: every code the layer can produce has a severity, and
docs/integrity.md lists each with the same severity."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from pytest_scorewright.integrity import codes
from pytest_scorewright.integrity.codes import CODES, reason, severity_of

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "src" / "pytest_scorewright"


def test_docs_list_every_code_with_its_severity() -> None:
    text = (ROOT / "docs" / "integrity.md").read_text(encoding="utf-8")
    table = dict(re.findall(r"^\| `([a-z_]+)` \| (tamper|gaming|hint) \|", text, re.M))
    assert table == {code: c.severity for code, c in CODES.items()}


def test_every_code_written_in_the_source_is_in_the_table() -> None:
    # Codes appear as string literals passed to reason(), finding(), note() or Hit(...).
    used: set[str] = set()
    for path in SOURCE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and node.args:
                name = getattr(node.func, "attr", getattr(node.func, "id", ""))
                first = node.args[0]
                if name in ("reason", "finding", "note", "_hit", "Hit", "file_finding") and (
                    isinstance(first, ast.Constant) and isinstance(first.value, str)
                ):
                    used.add(first.value)
    assert used, "no codes found: the pattern above went stale"
    assert used - set(CODES) == set()


def test_an_unknown_code_from_a_newer_file_is_a_hint() -> None:
    assert severity_of("from_a_future_version") == "hint"
    assert reason("pytest_tampered", "x").severity == "tamper"
    assert codes.strongest([reason("source_atexit", "a"), reason("reads_tests", "b")]) == "gaming"
