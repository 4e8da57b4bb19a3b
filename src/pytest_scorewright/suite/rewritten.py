"""The trusted suite's assertion-rewritten bytecode, made once instead of in every run.

pytest rewrites the asserts of every test module and conftest.py it imports: parse, rewrite,
compile, ~2 ms for a 17-line module and ~38 ms for a 600-line one, in every sandboxed run
(bytecode writing is off there). The Evaluator does it once per suite, with pytest's own
functions, and lays the result down as pytest's own cache file (``__pycache__/<name>.<tag>-
pytest-<version>.pyc``) in every run's fresh copy of the tests, root-owned like the tests.
pytest's importer reads a cache file even when it may not write one, checks it against a
hash of the source next to it, and rewrites as usual when it is missing, stale or unreadable,
so a mismatch costs time, never correctness.

Nothing here executes a test: the source is parsed and compiled, not run. This relies on
``_pytest.assertion.rewrite`` (``rewrite_asserts``, ``_write_pyc_fp``, ``PYC_TAIL``); with a
pytest that lacks them, no cache is made.

The bytecode is also instrumented (suite/instrument.py), so that the parent can check outcomes
itself: each passing assertion sends its operands as plain data (re-checked in the parent),
each module announces that it runs this bytecode, and what it defines is registered with the
monitor (oracle identity). A module the instrumentation cannot handle gets pytest's bytecode
alone.
"""

from __future__ import annotations

import ast
import fnmatch
import importlib.util
import io
import os
import types
from pathlib import Path

from pytest_scorewright.suite.instrument import instrument_after, instrument_before

#: pytest's default ``python_files`` (our ini sets none), plus conftest.py, always rewritten.
_PATTERNS = ("test_*.py", "*_test.py", "conftest.py")
_MAX_BYTES = 32 * 1024 * 1024


def rewritten_suite(tests: Path) -> dict[str, bytes]:
    """Cache files for the suite in ``tests``: relative path -> contents."""
    try:
        from _pytest.assertion.rewrite import PYC_TAIL, _write_pyc_fp
    except ImportError:  # pragma: no cover - a pytest without them
        return {}
    made: dict[str, bytes] = {}
    total = 0
    for dirpath, dirnames, filenames in os.walk(tests):  # never follows a symlink
        dirnames[:] = sorted(d for d in dirnames if d not in ("__pycache__", ".git"))
        for name in sorted(filenames):
            path = Path(dirpath, name)
            if path.is_symlink() or not any(fnmatch.fnmatch(name, p) for p in _PATTERNS):
                continue
            relative_name = path.relative_to(tests).as_posix()
            try:
                source_hash, code = _rewrite(path, relative_name)
            except Exception:  # a syntax error: pytest reports it in the run  # noqa: S112
                continue
            buffer = io.BytesIO()
            _write_pyc_fp(buffer, source_hash, code)
            total += buffer.tell()
            if total > _MAX_BYTES:
                return made  # a huge suite: the rest is rewritten in each run
            relative = path.relative_to(tests).parent / "__pycache__" / (name[:-3] + PYC_TAIL)
            made[str(relative)] = buffer.getvalue()
    return made


def _rewrite(path: Path, relative_name: str) -> tuple[bytes, types.CodeType]:
    """pytest's ``_rewrite_test`` with the instrumentation around its assertion rewriting;
    pytest's alone if the instrumentation fails."""
    from _pytest.assertion.rewrite import rewrite_asserts

    source = path.read_bytes()
    source_hash = importlib.util.source_hash(source)
    strfn = str(path)
    try:
        tree = ast.parse(source, filename=strfn)
        asserts = instrument_before(tree, relative_name)
        rewrite_asserts(tree, source, strfn, None)
        instrument_after(tree, relative_name, asserts)
        return source_hash, compile(tree, strfn, "exec", dont_inherit=True)
    except (SyntaxError, RecursionError):
        raise
    except Exception:  # the instrumentation's problem: pytest's bytecode, uninstrumented
        tree = ast.parse(source, filename=strfn)
        rewrite_asserts(tree, source, strfn, None)
        return source_hash, compile(tree, strfn, "exec", dont_inherit=True)


def lay_down(made: dict[str, bytes], tests_copy: Path) -> None:
    """Write the cache files into a run's copy of the tests."""
    for relative, data in made.items():
        target = tests_copy / relative
        target.parent.mkdir(exist_ok=True)
        target.write_bytes(data)
