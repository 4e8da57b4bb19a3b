"""The layout's own guarantees: what child code may import, and names that checks rely on."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_scorewright import child
from pytest_scorewright.child import monitor
from pytest_scorewright.integrity import verdict
from pytest_scorewright.sandbox import wire

CHILD_DIR = Path(child.__file__).parent

#: Modules no code that runs next to the candidate may load, even indirectly.
PARENT_ONLY = (
    "pytest_scorewright.evaluator",
    "pytest_scorewright.sandbox.launch",
    "pytest_scorewright.sandbox.deadline",
    "pytest_scorewright.sandbox.sweep",
    "pytest_scorewright.sandbox.plan",
    "pytest_scorewright.sandbox.collect",
    "pytest_scorewright.sandbox.features",
    "pytest_scorewright.sandbox.workspace",
    "pytest_scorewright.warm",
    "pytest_scorewright.integrity",
    "pytest_scorewright.fanout",
    "pytest_scorewright.results.assemble",
    "pytest_scorewright.fitness",
    "pytest_scorewright.leaderboard",
    "pytest_scorewright.openevolve",
    "pytest_scorewright.shinka",
    "pytest_scorewright.verifiers",
    "pytest_scorewright.cli",
)


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every module an import statement in ``path`` names (also inside functions)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return found


@pytest.mark.parametrize("path", sorted(CHILD_DIR.glob("*.py")), ids=lambda p: p.name)
def test_child_code_imports_only_what_the_child_side_may(path: Path) -> None:
    for line, name in _imports(path):
        if not name.startswith("pytest_scorewright"):
            continue
        if name in ("pytest_scorewright.sandbox", "pytest_scorewright.results"):
            continue  # `from pytest_scorewright.sandbox import wire`: the member decides
        allowed = any(
            name == prefix or name.startswith(prefix + ".") for prefix in child.ALLOWED_IMPORTS
        )
        assert allowed, f"{path.name}:{line} imports {name}, which child code may not"


def test_loading_the_child_side_loads_nothing_of_the_parents() -> None:
    # What a sandboxed run imports of ours (its processes, pytest's run, and our plugin), in
    # a fresh interpreter, so that nothing this test process loaded counts.
    code = (
        "import sys\n"
        "import pytest_scorewright.child.processes, pytest_scorewright.plugin\n"
        "print('\\n'.join(m for m in sys.modules if m.startswith('pytest_scorewright')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = done.stdout.split()
    assert "pytest_scorewright.child.runner" in loaded
    leaked = [m for m in loaded if m.startswith(PARENT_ONLY)]
    assert not leaked, f"the child side loads parent-only modules: {leaked}"


def test_the_verdict_has_a_handler_for_every_message_kind() -> None:
    missing = set(wire.VOCABULARY) - set(verdict._HANDLERS) - {wire.SANDBOX}
    assert not missing, f"message kinds the verdict cannot handle: {sorted(missing)}"
    unknown = set(verdict._HANDLERS) - set(wire.VOCABULARY)
    assert not unknown, f"handlers for kinds not in the vocabulary: {sorted(unknown)}"


@pytest.mark.parametrize("watched", monitor.watched(), ids=lambda w: ".".join(p for p in w if p))
def test_every_identity_the_monitor_snapshots_resolves(watched: tuple[str, str, str]) -> None:
    # The monitor names what it watches; a module moved or renamed would silently leave an
    # identity unchecked (the snapshot skips what it cannot find).
    module_name, owner, name = watched
    module = importlib.import_module(module_name)
    holder = getattr(module, owner) if owner else module
    assert name in vars(holder), f"{module_name}.{owner}.{name} does not exist"
