"""pytest's configuration, parsed once in the warm parent instead of in every run.

Parsing the command line and the ini file, registering pytest's ~30 built-in plugins and
building the option parser cost ~20 ms a run (measured: configuration was 21 of the 61 ms of
a forked 12-test ``pytest.main``). The warm parent does it once per distinct command line,
before any fork, for a work dir at a fixed path, and every run's child continues from there:
configure, session, collection and tests, exactly as ``pytest.main`` would.

The fixed path is an empty directory (holding only our ini file) in the warm parent, so
nothing from a suite or a candidate is imported there: pytest loads a conftest.py only
where one exists. Each run's PID 1 bind-mounts that run's own work dir on the fixed path
inside its private mount namespace, so the parsed paths are right in the child and the
suite's conftest.py files are loaded during collection instead.

That is the same run only if no conftest.py that pytest would load before configuring
(``conftest.py`` in the tests directory or in a ``test*`` directory below it) needs to be
loaded that early; :func:`needs_early_conftest` checks, and such suites are configured by
``pytest.main`` in every run, as are runs without namespaces. This relies on
``_pytest.config._prepareconfig``; where a pytest version lacks it, every run is configured
the ordinary way.
"""

from __future__ import annotations

import ast
import contextlib
import gc
import importlib
import os
import sys
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

#: Hooks that act before a late-loaded conftest.py could take part.
EARLY_HOOKS = frozenset(
    {
        "pytest_plugins",
        "pytest_addoption",
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

_KEEP = 8  # command lines kept parsed (visible, held-out, a first stage, collection...)
_prepared: OrderedDict[tuple[str, ...], Any] = OrderedDict()


def needs_early_conftest(tests: Path) -> str | None:
    """Why the suite in ``tests`` must be configured by ``pytest.main`` in each run (a
    conftest.py pytest loads before configuring that uses it), or None."""
    initial = [tests / "conftest.py"]
    initial += [d / "conftest.py" for d in sorted(tests.glob("test*")) if d.is_dir()]
    for path in initial:
        if not path.is_file():
            continue
        try:
            tree = ast.parse(path.read_bytes(), filename=str(path))
        except (SyntaxError, ValueError, OSError):
            return f"{path} could not be parsed"
        for name in _top_level_names(tree):
            if name in EARLY_HOOKS:
                return f"{path} defines {name}"
    return None


def _top_level_names(tree: ast.Module) -> list[str]:
    """Names a module defines at import: its top-level statements, including those inside
    top-level if/try/with blocks (``try: import x`` is common in conftest files)."""
    names: list[str] = []
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        node = pending.pop()
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


def prepare(args: Sequence[str], plugins: Sequence[str], invocation_dir: str) -> Any | None:
    """The parsed ``pytest.Config`` for this command line (cached), or None when it cannot be
    prepared here (the child then runs ``pytest.main``, which reports any problem)."""
    key = (*args, "\0", *plugins)
    config = _prepared.get(key)
    if config is not None:
        _prepared.move_to_end(key)
        return config
    try:
        from _pytest.config import _prepareconfig
    except ImportError:  # pragma: no cover - a pytest without it
        return None
    previous = os.getcwd()
    try:
        os.chdir(invocation_dir)
        config = _prepareconfig(list(args), [importlib.import_module(p) for p in plugins])
    except BaseException:  # a usage error, an import error: the child will report it
        return None
    finally:
        os.chdir(previous)
    _prepared[key] = config
    while len(_prepared) > _KEEP:
        _, old = _prepared.popitem(last=False)
        with contextlib.suppress(Exception):
            old._ensure_unconfigure()  # removes its assertion-rewriting import hook
    # Parsed once, shared by every fork: keep the collector off these pages too.
    gc.collect()
    gc.freeze()
    return config


def adopt(config: Any | None) -> None:
    """In the child, before pytest runs: keep only this run's assertion-rewriting import
    hook (every configuration parsed in the warm parent installed one)."""
    from _pytest.assertion.rewrite import AssertionRewritingHook

    own = getattr(config.pluginmanager, "rewrite_hook", None) if config is not None else None
    sys.meta_path[:] = [
        finder
        for finder in sys.meta_path
        if not isinstance(finder, AssertionRewritingHook) or finder is own
    ]
