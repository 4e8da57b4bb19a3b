"""Which suites need their conftest.py loaded early, read from the source, never imported.

pytest loads the initial conftest.py files (``conftest.py`` in the tests directory, or in a
``test*`` directory below it) while it parses its command line. The warm parent parses with
the run's work dir still empty (prepared.py), so those files are loaded later: during
collection, or by the run itself before it configures. This module decides, from each
file's top-level names, which of the two is enough, or whether only ``pytest.main`` in
each run gives the same run.
"""

from __future__ import annotations

import ast
from pathlib import Path

#: Hooks that act before a late-loaded conftest.py could take part. Not
#: ``pytest_addoption``: an option or ini key added late still gets its default (pytest sets
#: it on registration), and its default is all a run ever sees, since the command line and
#: the (empty) ini file are the Evaluator's own and ``PYTEST_*`` variables send every run
#: through ``pytest.main``.
EARLY_HOOKS = frozenset(
    {
        "pytest_plugins",
        "pytest_addhooks",
        "pytest_load_initial_conftests",
        "pytest_cmdline_parse",
        "pytest_cmdline_preparse",
        "pytest_cmdline_main",
        "pytest_plugin_registered",
        "pytest_sessionstart",
        "pytest_collection",
        "pytest_collect_directory",
        "pytest_ignore_collect",
    }
)

#: Early hooks that act while pytest parses its command line: a conftest.py using one must
#: be loaded by pytest.main itself, in each run.
PARSE_HOOKS = frozenset(
    {"pytest_load_initial_conftests", "pytest_cmdline_parse", "pytest_cmdline_preparse"}
)


def needs_early_conftest(tests: Path) -> str | None:
    """Why the suite in ``tests`` needs its initial conftest.py loaded before pytest
    configures (it uses an early hook), or None."""
    return next((why for why, _ in _early_uses(tests)), None)


def needs_parsing_in_run(tests: Path) -> str | None:
    """Why the suite in ``tests`` must be configured by ``pytest.main`` in each run (an
    initial conftest.py uses a hook that acts while pytest parses, or cannot be read)."""
    return next((why for why, at_parse in _early_uses(tests) if at_parse), None)


def _early_uses(tests: Path) -> list[tuple[str, bool]]:
    """Each early hook an initial conftest.py uses: (why, whether it acts while parsing)."""
    initial = [tests / "conftest.py"]
    initial += [d / "conftest.py" for d in sorted(tests.glob("test*")) if d.is_dir()]
    found: list[tuple[str, bool]] = []
    for path in initial:
        if not path.is_file():
            continue
        try:
            tree = ast.parse(path.read_bytes(), filename=str(path))
        except (SyntaxError, ValueError, OSError):
            found.append((f"{path} could not be parsed", True))
            continue
        found += [
            (f"{path} defines {name}", name in PARSE_HOOKS)
            for name in _top_level_names(tree)
            if name in EARLY_HOOKS
        ]
    return found


def _top_level_names(tree: ast.Module) -> list[str]:
    """Names a module defines at import: its top-level statements, including those inside
    top-level if/try/with blocks (``try: import x`` is common in conftest files)."""
    names: list[str] = []
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        node = pending.pop(0)  # source order, so the first early hook is named
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.append(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names += [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names += [alias.asname or alias.name for alias in node.names]
        elif isinstance(node, ast.If | ast.Try | ast.With | ast.For | ast.While):
            for block in ("body", "orelse", "finalbody"):
                pending += getattr(node, block, [])
            for handler in getattr(node, "handlers", []):
                pending += handler.body
        elif not isinstance(node, ast.Expr | ast.Pass):
            names.append("pytest_plugins")  # anything else (match, exec'd names): unsure
    return names
