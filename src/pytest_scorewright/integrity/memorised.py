"""Memorised test inputs: distinctive literals the candidate's source shares with the visible
tests, beyond what the reference's source shares with them.

A lookup table of the visible inputs, the visible positive cases hard-coded, the answer to a
benchmark's one size: each puts the tests' own literals into the candidate's source. Honest
code shares few: the reference is the measure (a literal it shares too is no evidence), and
only distinctive literals count, weighed by how unlikely an honest program is to contain
them (docs/integrity.md has the calibration).

- strings of 3 or more characters: 1; of 8 or more with a space or punctuation (a sentence,
  an e-mail address, a path): 3;
- integers other than -9..9, powers of ten and of two and round numbers below 1000: 1 (a
  benchmark's size, 200_000, counts); with 5 or more digits, of which at least 4 significant
  (an answer, not a size): 3;
- floats other than whole numbers and halves: 1;
- tuples of two or more constants with a distinctive member: 2 (a table's key);
- bytes of 3 or more: 1.

The evidence is ``memorised_inputs`` when the extra weight reaches :data:`THRESHOLD` with a
reference; without one it is only a hint (there is no honest baseline to compare with).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from pytest_scorewright.integrity.codes import reason
from pytest_scorewright.integrity.static_scan import SourceScan, parse_source, scan_tree
from pytest_scorewright.result import Reason

#: Extra shared weight that counts as memorised inputs. Calibrated on tests/corpus: honest
#: candidates share at most 2 beyond the reference, a lookup table of the visible inputs
#: 12 or more, hard-coded positives 6, a benchmark size with its answer 4.
THRESHOLD = 4
#: Extra shared weight recorded as a hint: alone it never changes a score, but with held-out
#: divergence it rejects (integrity/reasons.py, weigh_together).
HINT_THRESHOLD = 2
#: Literals kept per file (a generated table of a million constants is not read whole).
_MAX_PER_FILE = 20_000

Literal = tuple[str, object]


@dataclass(frozen=True)
class SuiteLiterals:
    """The visible tests' distinctive literals, and those the reference shares with them."""

    tests: frozenset[Literal]
    reference_shared: frozenset[Literal] | None
    #: The names the tests mention: code reachable from them is what the tests run.
    used: frozenset[str] | None = None


def weight(literal: Literal) -> int:
    kind, value = literal
    if kind == "str":
        text = str(value)
        if len(text) >= 8 and any(not c.isalnum() for c in text):
            return 3
        return 1 if len(text.strip()) >= 3 else 0
    if kind == "int":
        return _int_weight(int(value))  # type: ignore[call-overload]
    if kind == "float":
        number = float(value)  # type: ignore[arg-type]
        return 0 if (2 * number).is_integer() else 1
    if kind == "bytes":
        return 1 if len(value) >= 3 else 0  # type: ignore[arg-type]
    if kind == "tuple":
        members = [_literal(m) for m in (value if isinstance(value, tuple) else ())]
        return 2 if any(weight(m) for m in members if m is not None) else 0
    return 0


def _int_weight(number: int) -> int:
    n = abs(number)
    if n < 10 or n & (n - 1) == 0 or (n + 1) & n == 0:  # small, 2**k, 2**k - 1
        return 0
    digits = str(n)
    significant = digits.rstrip("0")
    if significant == "1" or (len(significant) == 1 and n < 1000):  # 10**k; 20, 500
        return 0
    return 3 if len(digits) >= 5 and len(significant) >= 4 else 1


def _literal(value: object) -> Literal | None:
    kind = type(value)
    if kind is str:
        return ("str", value)
    if kind is int:
        return ("int", value)
    if kind is float:
        return ("float", value)
    if kind is bytes:
        return ("bytes", value)
    return None


def literals(tree: ast.Module, *, program: bool = True) -> set[Literal]:
    """Every distinctive literal in a module, less those of code that only checks or describes
    the program itself: docstrings (doctests included), ``assert`` statements, exception
    messages, f-strings, and calls that print or log. An LLM's self-check on the prompt's
    example (``assert f("MCMXCIV") == 1994``) is no table: nothing it holds is returned.
    ``program=False`` (the tests' own files) reads them all."""
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    unread = docstrings | (_self_checking(tree) if program else set())
    found: set[Literal] = set()
    for node in ast.walk(tree):
        if len(found) >= _MAX_PER_FILE:
            break
        if id(node) in unread:
            continue
        if isinstance(node, ast.Constant):
            literal = _literal(node.value)
            if literal is not None and weight(literal):
                found.add(literal)
            found |= _inside_repr(node.value, program)
        elif isinstance(node, (ast.Tuple, ast.List)) and len(node.elts) >= 2:
            values = [e.value if isinstance(e, ast.Constant) else _negative(e) for e in node.elts]
            if all(_literal(v) is not None for v in values):
                literal = ("tuple", tuple(values))
                if weight(literal):
                    found.add(literal)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            negative = _negative(node)
            literal = _literal(negative)
            if literal is not None and weight(literal):
                found.add(literal)
    return found


#: A string longer than this is not read as a repr.
_MAX_REPR = 4000


def _inside_repr(value: object, program: bool) -> set[Literal]:
    """A program's string that is the repr of a container (``"('aaabcc',)"``, a table keyed
    by ``repr(args)``): the literals inside it."""
    if not program or type(value) is not str or not 2 <= len(value) <= _MAX_REPR:
        return set()
    if value[0] not in "([{" or value[-1] not in ")]}":
        return set()
    try:
        tree = ast.parse(value, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return set()
    if not isinstance(tree.body, (ast.Tuple, ast.List, ast.Set, ast.Dict)):
        return set()
    return literals(ast.Module(body=[ast.Expr(tree.body)], type_ignores=[]), program=False)


#: Calls whose arguments are messages, not behaviour: print, logging, warnings.
_MESSAGE_CALLS = frozenset(
    {"print", "debug", "info", "warning", "warn", "error", "exception", "critical", "log"}
)


def _self_checking(tree: ast.AST) -> set[int]:
    """The ids of every node inside an ``assert``, a ``raise``, an f-string, or a print or
    logging call."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assert, ast.Raise, ast.JoinedStr)) or _is_message_call(node):
            found.update(id(sub) for sub in ast.walk(node))
    return found


def _is_message_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
    return name in _MESSAGE_CALLS


def _negative(node: ast.expr) -> object:
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
        and type(node.operand.value) in (int, float)
    ):
        return -node.operand.value  # type: ignore[operator]
    return None


def source_literals(
    files: dict[str, bytes], used: frozenset[str] | None = None, *, program: bool = True
) -> set[Literal]:
    """The files' distinctive literals. With ``used`` (the names the tests take from the
    code), only code the tests can reach counts: not ``if __name__ == "__main__":`` blocks,
    nor top-level functions, classes and tables that nothing reachable refers to (a demo, a
    self-test table): an LLM writes those, and they echo the prompt's examples."""
    found: set[Literal] = set()
    for tree in _trees(files, used):
        found |= literals(tree, program=program)
    return found


def _trees(files: dict[str, bytes], used: frozenset[str] | None) -> list[ast.Module]:
    trees = {}
    for name, data in files.items():
        try:
            tree = parse_source(data, name)
        except Exception:  # noqa: S112 - unscannable files are reported by the scan
            continue
        if tree is not None:
            trees[name] = tree
    if used is not None:
        imported = {a.asname or a.name for t in trees.values() for a in _from_imports(t)}
        trees = {name: reachable(tree, used | imported) for name, tree in trees.items()}
    return list(trees.values())


def _key_literals(tree: ast.Module) -> set[Literal]:
    """The literals in a dict display's keys (a table's lookups)."""
    found: set[Literal] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            keys = [k for k in node.keys if k is not None]
            found |= literals(ast.Module(body=[ast.Expr(k) for k in keys], type_ignores=[]))
        if len(found) >= _MAX_PER_FILE:
            break
    return found


def reachable(tree: ast.Module, roots: frozenset[str] | set[str]) -> ast.Module:
    """``tree`` without its ``__main__`` blocks and without the top-level definitions that
    nothing reachable from ``roots`` (or from the module's other top-level code) names."""
    body = [node for node in tree.body if not _is_main_block(node) and not _checks_only(node)]
    defined = {name: node for node in body for name in _bound(node)}
    keep = [node for node in body if not _bound(node)]  # imports, calls, loops: they run
    wanted = set(roots) | _exported(body)
    for node in keep:
        wanted |= _names(node)
    seen: set[int] = set()
    while True:
        fresh = [
            defined[name] for name in wanted if name in defined and id(defined[name]) not in seen
        ]
        if not fresh:
            break
        for node in fresh:
            seen.add(id(node))
            wanted |= _names(node)
    return ast.Module(body=[n for n in body if not _bound(n) or id(n) in seen], type_ignores=[])


def _checks_only(node: ast.stmt) -> bool:
    """Top-level code that only checks the program: an ``assert``, a bare call (a self-test
    function, ``doctest.testmod()``, a print), or a loop, ``if``, ``try`` or ``with`` made of
    nothing else. Code that assigns or mutates something builds state, and stays."""
    if isinstance(node, (ast.Assert, ast.Pass)):
        return True
    if isinstance(node, ast.Expr):
        value = node.value
        if isinstance(value, ast.Constant):
            return True
        if isinstance(value, ast.Call):
            return (
                isinstance(value.func, ast.Name)
                or _is_message_call(value)
                or (isinstance(value.func, ast.Attribute) and value.func.attr == "testmod")
            )
        return False
    blocks: list[list[ast.stmt]] = []
    if isinstance(node, (ast.For, ast.While, ast.If)):
        blocks = [node.body, node.orelse]
    elif isinstance(node, ast.With):
        blocks = [node.body]
    elif isinstance(node, ast.Try):
        blocks = [node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)]
    if not blocks:
        return False
    return all(_checks_only(inner) for block in blocks for inner in block)


def _is_main_block(node: ast.stmt) -> bool:
    if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare):
        return False
    sides = [node.test.left, *node.test.comparators]
    names = {s.id for s in sides if isinstance(s, ast.Name)}
    texts = {s.value for s in sides if isinstance(s, ast.Constant)}
    return names == {"__name__"} and texts == {"__main__"}


def _bound(node: ast.stmt) -> list[str]:
    """The names a top-level definition or plain assignment binds (nothing for other code)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    targets = node.targets if isinstance(node, ast.Assign) else []
    if isinstance(node, ast.AnnAssign):
        targets = [node.target]
    names = [t.id for t in targets if isinstance(t, ast.Name)]
    return names if names and len(names) == len(targets) else []


def _names(node: ast.AST) -> set[str]:
    """Every name and attribute a piece of code mentions (a string in ``getattr`` too)."""
    found = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            found.add(sub.id)
        elif isinstance(sub, ast.Attribute):
            found.add(sub.attr)
        elif (
            isinstance(sub, ast.Constant)
            and isinstance(sub.value, str)
            and sub.value.isidentifier()
        ):
            found.add(sub.value)
    return found


def _exported(body: list[ast.stmt]) -> set[str]:
    found: set[str] = set()
    for node in body:
        if "__all__" in _bound(node) and isinstance(node, ast.Assign):
            found |= _names(node.value)
    return found


def _from_imports(tree: ast.Module) -> list[ast.alias]:
    return [a for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names]


def used_names(tests: Path) -> frozenset[str]:
    """What the test files can take from the code under test: every name and attribute they
    mention (a superset, read and never run)."""
    found: set[str] = set()
    for path in sorted(tests.rglob("*.py")):
        try:
            found |= _names(ast.parse(path.read_bytes()))
        except (SyntaxError, ValueError, OSError):
            continue
    return frozenset(found)


def suite_literals(tests: Path, reference: SourceScan | None) -> SuiteLiterals:
    """Once per Evaluator: the visible tests' literals, and the reference's share."""
    test_files = {
        str(p.relative_to(tests)): p.read_bytes()
        for p in sorted(tests.rglob("*.py"))
        if p.is_file() and not p.is_symlink()
    }
    found = frozenset(source_literals(test_files, program=False))
    used = used_names(tests)
    shared = None
    if reference is not None:
        shared = frozenset(source_literals(reference.files, used) & found)
    return SuiteLiterals(found, shared, used)


def memorised_reasons(candidate: Path, suite: SuiteLiterals) -> list[Reason]:
    trees = _trees(scan_tree(candidate).files, suite.used)
    shared = {lit for tree in trees for lit in literals(tree)} & suite.tests
    extra = sorted(shared - (suite.reference_shared or frozenset()), key=repr)
    # A visible input that is a table's key (a dict display's, or inside the repr a table is
    # keyed by) counts twice: that is where a lookup table keeps what it answers.
    keyed = {lit for tree in trees for lit in _key_literals(tree)}
    total = sum(weight(lit) * (2 if lit in keyed else 1) for lit in extra)
    if total < HINT_THRESHOLD:
        return []
    shown = ", ".join(repr(value)[:40] for _, value in _strongest(extra)[:5])
    more = f" and {len(extra) - 5} more" if len(extra) > 5 else ""
    beyond = " beyond the reference's" if suite.reference_shared is not None else ""
    detail = (
        f"the source shares {len(extra)} distinctive literal(s) with the visible tests{beyond} "
        f"(weight {total}; {THRESHOLD} counts): {shown}{more}"
    )
    if suite.reference_shared is None:
        return [Reason("memorised_inputs", detail + " (no reference to compare with)", "hint")]
    if total < THRESHOLD:  # with held-out divergence, it rejects (reasons.weigh_together)
        return [Reason("memorised_inputs", detail, "hint")]
    return [reason("memorised_inputs", detail)]


def _strongest(found: Iterable[Literal]) -> list[Literal]:
    return sorted(found, key=lambda lit: (-weight(lit), repr(lit)))
