"""Instrumenting the trusted suite's bytecode so that the parent can check outcomes itself.

Two passes around pytest's own assertion rewriting (suite/rewritten.py):

- before: remember every ``assert`` and what it compares (``==``, ``!=``, ``in``, ``not in``,
  ``<``/``<=``/``>``/``>=``, ``is None``, ``is not None``, ``not x``, a bare truth test);
  turn unittest's ``self.assertEqual(a, b)`` family into a call through
  child/test_process/recheck.py's ``call`` (which calls the method, then re-checks); add a first
  statement
  that announces the module runs this bytecode and a last one that registers what it
  defines with the monitor (oracle identity).
- after: pytest has turned each assert into statements that keep every operand in a
  temporary (``@py_assertN``) and an ``if not <result>: raise AssertionError(...)``; right
  after that ``if`` (so only when the assertion passed) add a call that sends the operands.
  pytest's failure messages are untouched.

The names used (``@sw_recheck``, ``@sw_builtins``) cannot be written in Python source, so they
cannot clash with the suite's, as pytest's own ``@py_*`` names.
"""

from __future__ import annotations

import ast
import copy

from pytest_scorewright.child.test_process.recheck import UNITTEST as RECHECKED_METHODS

_RECHECK = "@sw_recheck"
_BUILTINS = "@sw_builtins"
_COMPARES: dict[type[ast.cmpop], str] = {
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.In: "in",
    ast.NotIn: "not in",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
}
#: unittest's assertion methods re-checked (child/test_process/recheck.py knows what each compares).
UNITTEST = frozenset(RECHECKED_METHODS)

#: (line, column) of an assert -> what it compares.
Asserts = dict[tuple[int, int], str]


def instrument_before(tree: ast.Module, path: str) -> Asserts:
    """The first pass: remember the asserts, route unittest assertions, add the module's
    first and last statements."""
    asserts: Asserts = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert):
            asserts[(node.lineno, node.col_offset)] = _what(node.test)
    _UnittestCalls(path).visit(tree)
    prologue = [
        ast.Import([ast.alias("pytest_scorewright.child.test_process.recheck", _RECHECK)]),
        ast.Import([ast.alias("builtins", _BUILTINS)]),
        ast.Expr(_call("module_start", ast.Constant(path))),
    ]
    at = _after_docstring_and_future(tree)
    tree.body[at:at] = prologue
    tree.body.append(
        ast.Expr(
            _call(
                "module_done",
                ast.Constant(path),
                ast.Call(ast.Attribute(_name(_BUILTINS), "globals", ast.Load()), [], []),
            )
        )
    )
    ast.fix_missing_locations(tree)
    return asserts


def instrument_after(tree: ast.Module, path: str, asserts: Asserts) -> None:
    """The second pass, on pytest's rewritten tree: send the operands of passing asserts,
    and route every call's result through ``returned``."""
    for body in _bodies(tree):
        index = 0
        while index < len(body):
            check = _check_for(body, index, path, asserts)
            if check is not None:
                body.insert(index + 1, check)
                index += 1
            index += 1
    _CallResults(path).visit(tree)
    ast.fix_missing_locations(tree)


class _CallResults(ast.NodeTransformer):
    """``f(x)`` -> ``@sw_recheck.returned(site, f(x))``: the value is untouched; what kind it
    is (the candidate's own object, or not) is told to the parent once per test and site,
    which sets it against the reference's run at the same site. After pytest's rewriting,
    so its failure messages, built from the original source, still show ``f(x)``. Every
    node of a rewritten assert carries the assert's position: an ordinal per position tells
    its calls apart."""

    _OURS = frozenset({"@py_builtins", "@pytest_ar", _RECHECK, _BUILTINS})

    def __init__(self, path: str) -> None:
        self.path = path
        self.ordinals: dict[tuple[int, int], int] = {}

    def visit_Call(self, node: ast.Call) -> ast.expr:
        self.generic_visit(node)
        root = node.func
        while isinstance(root, (ast.Attribute, ast.Call, ast.Subscript)):
            root = root.func if isinstance(root, ast.Call) else root.value
        if isinstance(root, ast.Name) and root.id in self._OURS:
            return node
        where = (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
        ordinal = self.ordinals.get(where, 0)
        self.ordinals[where] = ordinal + 1
        site = f"{self.path}:{where[0]}:{where[1]}#{ordinal}"
        return ast.copy_location(_call("returned", ast.Constant(site), node), node)


def _what(test: ast.expr) -> str:
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        op, right = test.ops[0], test.comparators[0]
        if isinstance(op, (ast.Is, ast.IsNot)):
            if isinstance(right, ast.Constant) and right.value is None:
                return "is None" if isinstance(op, ast.Is) else "is not None"
            return ""
        return _COMPARES.get(type(op), "")
    if isinstance(test, ast.Compare):
        return ""  # chained: a < b < c
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return "not"
    return "truth"


def _check_for(body: list[ast.stmt], index: int, path: str, asserts: Asserts) -> ast.stmt | None:
    """The re-check call for the rewritten assert whose ``if not ...: raise`` is at
    ``body[index]``, or None."""
    stmt = body[index]
    if not (
        isinstance(stmt, ast.If)
        and isinstance(stmt.test, ast.UnaryOp)
        and isinstance(stmt.test.op, ast.Not)
        and stmt.body
        and _raises_assertion_error(stmt.body[-1])
    ):
        return None
    op = asserts.get((stmt.lineno, stmt.col_offset), "")
    result = stmt.test.operand
    operands: list[ast.expr] | None
    if not op:
        return None
    if op == "truth":
        operands = [result]
    else:
        value = _assigned(body[:index], result)
        if op == "not":
            ok = isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.Not)
            operands = [value.operand] if ok else None  # type: ignore[union-attr]
        elif isinstance(value, ast.Compare) and len(value.ops) == 1:
            operands = [value.left, value.comparators[0]][: 1 if "None" in op else 2]
        else:
            operands = None
    if operands is None or not all(isinstance(o, (ast.Name, ast.Constant)) for o in operands):
        return None  # not the shape pytest makes: leave this assert alone
    site = f"{path}:{stmt.lineno}:{stmt.col_offset}"
    loads = [_load(o) for o in operands]
    check = ast.Expr(_call("check", ast.Constant(site), ast.Constant(op), *loads))
    return ast.copy_location(check, stmt)


def _assigned(before: list[ast.stmt], name: ast.expr) -> ast.expr | None:
    """What the last statement in ``before`` that assigns ``name`` assigned."""
    if not isinstance(name, ast.Name):
        return None
    for stmt in reversed(before):
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and stmt.targets[0].id == name.id
        ):
            return stmt.value
    return None


def _raises_assertion_error(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Raise)
        and isinstance(stmt.exc, ast.Call)
        and isinstance(stmt.exc.func, ast.Name)
        and stmt.exc.func.id == "AssertionError"
    )


class _UnittestCalls(ast.NodeTransformer):
    """``self.assertEqual(a, b, msg)`` -> ``@sw_recheck.call(site, "assertEqual",
    self.assertEqual, a, b, msg)``: the method runs as before, then, if it is unittest's own
    (not a helper of the suite's with the same name), the operands are sent."""

    def __init__(self, path: str) -> None:
        self.path = path

    def visit_Expr(self, node: ast.Expr) -> ast.Expr:
        call = node.value
        if not (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and call.func.attr in UNITTEST
        ):
            return node
        name = call.func.attr
        starred = any(isinstance(a, ast.Starred) for a in call.args)
        arity = RECHECKED_METHODS[name][1]
        if starred or len(call.args) < arity or any(k.arg is None for k in call.keywords):
            return node
        site = f"{self.path}:{node.lineno}:{node.col_offset}"
        routed = _call("call", ast.Constant(site), ast.Constant(name))
        routed.args += [call.func, *call.args]
        routed.keywords = call.keywords
        node.value = ast.copy_location(routed, call)
        return node


def _bodies(tree: ast.AST) -> list[list[ast.stmt]]:
    """Every statement list in the tree, each once (collected before any is changed)."""
    found: dict[int, list[ast.stmt]] = {}
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            value = getattr(node, field, None)
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                found.setdefault(id(value), value)
    return list(found.values())


def _after_docstring_and_future(tree: ast.Module) -> int:
    index = 0
    body = tree.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        index = 1
    while (
        index < len(body)
        and isinstance(body[index], ast.ImportFrom)
        and body[index].module == "__future__"  # type: ignore[attr-defined]
    ):
        index += 1
    return index


def _name(identifier: str) -> ast.Name:
    return ast.Name(identifier, ast.Load())


def _load(node: ast.expr) -> ast.expr:
    copied = copy.deepcopy(node)
    if isinstance(copied, ast.Name):
        copied.ctx = ast.Load()
    return copied


def _call(function: str, *args: ast.expr) -> ast.Call:
    return ast.Call(ast.Attribute(_name(_RECHECK), function, ast.Load()), list(args), [])
