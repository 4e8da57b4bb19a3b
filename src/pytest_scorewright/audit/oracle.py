"""The reference's (or a mutant's) answers to calls, computed in a process of its own.

The audit never imports the program it studies: each batch of calls runs in a fresh
``python -I`` process (no user site, no ``PYTHONPATH``, a temporary working directory and a
wall-clock limit; each call under its own ``SIGALRM`` limit) that writes ``repr`` text the
parent reads back with ``ast.literal_eval``. The reference is trusted, and mutants are made
from it; this is a process boundary and a timeout, not the Evaluator's sandbox.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_scorewright.audit.facts import CallSite
from pytest_scorewright.sandbox.workspace import private_tempdir

CHILD = Path(__file__).with_name("oracle_child.py")
#: One call's limit, and the whole batch's.
CALL_TIMEOUT_S = 2.0
BATCH_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class Answer:
    """One call: its arguments as literal text (None where they have none), and what
    happened: ``returned`` a value (literal text, None when it has none), ``raised`` an
    exception (a builtin one's name, else None), ``slow`` or ``error`` (not made)."""

    function: str
    args: str | None
    kwargs: str | None
    outcome: str
    value: str | None

    @property
    def literal(self) -> bool:
        """Arguments and outcome a test file can write down."""
        return self.args is not None and self.kwargs is not None and self.value is not None

    def same(self, other: Answer) -> bool:
        """Do the two calls agree, as a test's ``==`` or ``pytest.raises`` would see it?"""
        if self.outcome != other.outcome:
            return False
        if self.outcome == "raised":
            return self.value == other.value
        if self.value is None or other.value is None:
            return self.value == other.value
        mine, theirs = ast.literal_eval(self.value), ast.literal_eval(other.value)
        return type(mine) is type(theirs) and bool(mine == theirs)


def program_path(program: Path) -> tuple[str, str | None]:
    """The import path entry of a program (a directory, or a ``.py`` file's directory) and,
    for a file, the module name it must be imported under."""
    return (str(program), None) if program.is_dir() else (str(program.parent), program.stem)


def answers(
    program: Path,
    modules: Sequence[str],
    names: Sequence[str],
    calls: Sequence[dict[str, Any]],
    *,
    timeout_s: float = BATCH_TIMEOUT_S,
) -> list[Answer]:
    """What ``program`` does for each call (a CallSite's :func:`site_request`, or
    :func:`literal_request`); every call ``error`` when the process fails or runs out."""
    if not calls:
        return []
    program = program.resolve()
    with private_tempdir("scorewright-oracle-") as tmp:
        path, stem = program_path(program)
        if stem is not None and stem not in modules:
            # A reference file is imported under the suite's module name, as the tests do.
            shim = Path(tmp, "program")
            shim.mkdir()
            (shim / f"{modules[0]}.py").write_bytes(program.read_bytes())
            path = str(shim)
        request = Path(tmp, "request.json")
        reply = Path(tmp, "reply.json")
        request.write_text(
            json.dumps(
                {
                    "paths": [path],
                    "modules": list(modules),
                    "names": list(names),
                    "calls": list(calls),
                    "call_timeout_s": CALL_TIMEOUT_S,
                }
            ),
            encoding="utf-8",
        )
        try:
            subprocess.run(  # noqa: S603 - our own script, with this interpreter
                [sys.executable, "-I", str(CHILD), str(request), str(reply)],
                cwd=tmp,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=timeout_s,
                check=False,
            )
            raw = json.loads(reply.read_text(encoding="utf-8"))
        except (subprocess.TimeoutExpired, OSError, ValueError):
            raw = []
    if not isinstance(raw, list) or len(raw) != len(calls):
        raw = [{"outcome": "error"}] * len(calls)
    return [
        Answer(
            str(call["function"]),
            _text(r.get("args")),
            _text(r.get("kwargs")),
            str(r.get("outcome", "error")),
            _text(r.get("value")),
        )
        for call, r in zip(calls, raw, strict=True)
    ]


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def site_request(site: CallSite) -> dict[str, Any]:
    return {
        "function": site.function,
        "args": list(site.args),
        "kwargs": [list(kv) for kv in site.kwargs],
        "bindings": [list(b) for b in site.bindings],
    }


def literal_request(function: str, args: str, kwargs: str = "{}") -> dict[str, Any]:
    return {"function": function, "args_repr": args, "kwargs_repr": kwargs}
