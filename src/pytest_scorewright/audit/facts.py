"""What the audit learns from the files alone (nothing imported): the reference's modules
and their public names, and the calls the visible tests make with arguments a reader can
evaluate (literals, ``parametrize`` values, calls of the module's own functions)."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pytest_scorewright.errors import ConfigError

#: At most this many call sites are read from the visible tests (and evaluated later).
MAX_CALL_SITES = 400
#: Node types an argument may hold to be evaluated outside the test (no attribute access,
#: no subscripts, no comprehensions: what the reference alone can compute).
_PLAIN = (
    ast.Constant,
    ast.List,
    ast.Tuple,
    ast.Set,
    ast.Dict,
    ast.UnaryOp,
    ast.BinOp,
    ast.Name,
    ast.Load,
    ast.Call,
    ast.keyword,
    ast.operator,
    ast.unaryop,
    ast.Starred,
)


@dataclass(frozen=True)
class ModuleFile:
    """One module of the reference: its path inside the candidate and its public names."""

    relpath: str
    names: tuple[str, ...]


@dataclass(frozen=True)
class CallSite:
    """``function(*args, **kwargs)`` in a visible test, each argument as source text, with
    one binding of the test's ``parametrize`` names (source text too)."""

    function: str
    args: tuple[str, ...]
    kwargs: tuple[tuple[str, str], ...]
    bindings: tuple[tuple[str, str], ...]
    where: str


@dataclass
class Facts:
    reference: Path
    module: str
    modules: list[ModuleFile]
    calls: list[CallSite] = field(default_factory=list)

    @property
    def names(self) -> list[str]:
        """Every public name of every module, once, in order."""
        seen: dict[str, None] = {}
        for m in self.modules:
            seen.update(dict.fromkeys(m.names))
        return list(seen)


def test_files(directory: Path) -> list[Path]:
    found = {*directory.rglob("test_*.py"), *directory.rglob("*_test.py")}
    return sorted(p for p in found if "__pycache__" not in p.parts)


def learn(reference: Path, tests: Path, module: str) -> Facts:
    facts = Facts(reference, module, reference_modules(reference, module))
    functions = set(facts.names)
    for path in test_files(tests):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        except (SyntaxError, UnicodeDecodeError, OSError):
            continue  # the Evaluator says what is wrong with a test file; here it is no input
        aliases = _aliases(tree, module, functions)
        where = path.relative_to(tests).as_posix()
        for site in _calls(tree, aliases, where, _constants(tree)):
            if len(facts.calls) >= MAX_CALL_SITES:
                return facts
            facts.calls.append(site)
    return facts


def reference_modules(reference: Path, module: str) -> list[ModuleFile]:
    """The reference's modules, as paths relative to the candidate: a ``.py`` reference is
    ``<module>.py``; a directory's every ``.py`` file but tests and setup scripts."""
    if reference.is_file():
        return [ModuleFile(f"{module}.py", _public(reference))]
    found = []
    for path in sorted(reference.rglob("*.py")):
        rel = path.relative_to(reference)
        if any(p.startswith((".", "test")) or p == "__pycache__" for p in rel.parts) or (
            rel.name in ("setup.py", "conftest.py", "noxfile.py")
        ):
            continue
        found.append(ModuleFile(rel.as_posix(), _public(path)))
    if not found:
        raise ConfigError(f"the reference {reference} has no .py module to audit")
    return found


def _public(path: Path) -> tuple[str, ...]:
    """Top-level names a test can import: functions, classes, assignments, re-exports."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    except (SyntaxError, UnicodeDecodeError, OSError) as exc:
        raise ConfigError(f"cannot read the reference module {path}: {exc}") from None
    names: dict[str, None] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names[node.name] = None
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(dict.fromkeys(t.id for t in targets if isinstance(t, ast.Name)))
        elif isinstance(node, ast.ImportFrom) and node.level > 0:
            names.update(dict.fromkeys(a.asname or a.name for a in node.names if a.name != "*"))
    return tuple(n for n in names if not (n.startswith("__") and n.endswith("__")))


def _aliases(tree: ast.Module, module: str, functions: set[str]) -> dict[str, str]:
    """Local name -> the module's function it stands for; ``<alias>.`` -> ``""`` for a module
    imported whole (``import solution as s``)."""
    top = module.split(".")[0]
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == top:
            for a in node.names:
                if a.name in functions:
                    found[a.asname or a.name] = a.name
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == top:
                    found[f"{a.asname or a.name}."] = ""
    return found


def _function_of(call: ast.Call, aliases: dict[str, str]) -> str | None:
    if isinstance(call.func, ast.Name):
        return aliases.get(call.func.id)
    if isinstance(call.func, ast.Attribute) and f"{ast.unparse(call.func.value)}." in aliases:
        return call.func.attr
    return None


def _constants(tree: ast.Module) -> dict[str, ast.List | ast.Tuple]:
    """The test module's top-level ``NAME = [...]`` / ``(...)`` tables, which suites often
    hand to ``parametrize`` by name (``@parametrize(("camel", "snake"), CAMEL_TO_SNAKE)``);
    a name assigned twice is left out (which value a test sees depends on the order)."""
    found: dict[str, ast.List | ast.Tuple] = {}
    twice: set[str] = set()
    for node in tree.body:
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            if isinstance(target, ast.Name):
                twice.update({target.id} & found.keys())
                if len(node.targets) == 1 and isinstance(node.value, (ast.List, ast.Tuple)):
                    found[target.id] = node.value
    return {k: v for k, v in found.items() if k not in twice}


def _calls(
    tree: ast.Module,
    aliases: dict[str, str],
    where: str,
    constants: dict[str, ast.List | ast.Tuple],
) -> Iterator[CallSite]:
    for test in ast.walk(tree):
        if not isinstance(test, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if not test.name.startswith("test"):
            continue
        bindings = _parametrized(test, constants)
        for node in ast.walk(test):
            if not isinstance(node, ast.Call):
                continue
            name = _function_of(node, aliases)
            if name is None:
                continue
            for binding in bindings:
                if _evaluable(node, aliases, {n for n, _ in binding}):
                    yield CallSite(
                        name,
                        tuple(_rewritten(a, aliases) for a in node.args),
                        tuple(
                            (k.arg, _rewritten(k.value, aliases)) for k in node.keywords if k.arg
                        ),
                        binding,
                        f"{where}::{test.name}",
                    )


def _evaluable(call: ast.Call, aliases: dict[str, str], bound: set[str]) -> bool:
    if any(k.arg is None for k in call.keywords):
        return False
    for arg in [*call.args, *(k.value for k in call.keywords)]:
        for node in ast.walk(arg):
            if not isinstance(node, _PLAIN):
                return False
            if isinstance(node, ast.Name) and node.id not in bound and node.id not in aliases:
                return False
            if isinstance(node, ast.Call) and (
                not isinstance(node.func, ast.Name) or node.func.id not in aliases
            ):
                return False
    return True


def _rewritten(arg: ast.expr, aliases: dict[str, str]) -> str:
    """The argument's source with the module's functions under their own names; a starred
    argument (``f(*args)``) keeps its ``*`` in front, which the oracle unpacks."""
    if isinstance(arg, ast.Starred):
        return f"*{_rewritten(arg.value, aliases)}"

    class Renamer(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.Name:
            return ast.Name(aliases.get(node.id) or node.id, node.ctx)

    return ast.unparse(Renamer().visit(ast.parse(ast.unparse(arg), mode="eval")))


def _parametrized(
    test: ast.FunctionDef | ast.AsyncFunctionDef,
    constants: dict[str, ast.List | ast.Tuple],
) -> list[tuple[tuple[str, str], ...]]:
    """Every binding of the test's ``parametrize`` names (their cross product), as source;
    ``[()]`` for a test without one."""
    bindings: list[tuple[tuple[str, str], ...]] = [()]
    for deco in test.decorator_list:
        found = _parametrize_values(deco, constants)
        if found is None:
            continue
        names, rows = found
        bindings = [(*b, *zip(names, row, strict=True)) for b in bindings for row in rows][:50]
    return bindings


def _parametrize_values(
    deco: ast.expr, constants: dict[str, ast.List | ast.Tuple]
) -> tuple[list[str], list[Sequence[str]]] | None:
    """``parametrize``'s names (``"a, b"`` or ``("a", "b")``) and rows (a literal list, or a
    table of the module's own by name), as source; None where either is not one of those."""
    if not (
        isinstance(deco, ast.Call)
        and ast.unparse(deco.func).endswith("parametrize")
        and len(deco.args) >= 2
    ):
        return None
    names = _parametrize_names(deco.args[0])
    values = deco.args[1]
    if isinstance(values, ast.Name):
        values = constants.get(values.id, values)
    if names is None or not isinstance(values, (ast.List, ast.Tuple)):
        return None
    rows: list[Sequence[str]] = []
    for elt in values.elts:
        if len(names) == 1:
            rows.append([ast.unparse(elt)])
        elif isinstance(elt, (ast.Tuple, ast.List)) and len(elt.elts) == len(names):
            rows.append([ast.unparse(e) for e in elt.elts])
    return names, rows


def _parametrize_names(node: ast.expr) -> list[str] | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [n.strip() for n in node.value.split(",") if n.strip()]
    if isinstance(node, (ast.List, ast.Tuple)):
        names = [e.value for e in node.elts if isinstance(e, ast.Constant)]
        if len(names) == len(node.elts) and all(isinstance(n, str) for n in names):
            return [str(n) for n in names]
    return None
