"""The shape of a reference module as a gaming candidate keeps it: read from the reference's
own source (``ast``, nothing imported), its top-level statements that a test can see are
written again in their order, bodies gone. A class stays a class (a test subclasses it,
indexes it with ``[...]``, reads its properties), with the methods and properties the
reference's class body defines; a function stays a callable; a relative import of the
package's own modules stays an import, so ``from . import keys`` gives a submodule and a
re-exported class is the same class in both places. Every body answers through the
strategy's ``_answer(name, args, kwargs)``.
"""

from __future__ import annotations

import ast
from pathlib import Path

#: Helpers every stub module holds (after the strategy's ``_answer``): a function stub, and
#: the base of every class stub. A call made while a module or a class body runs (a
#: decorator applied at import) is answered with a do-nothing decorator, not by the
#: strategy: a candidate that broke the tests' collection would end plain pytest's session
#: before any test ran, and every strategy would score the same nothing. Attribute names
#: starting with ``_`` or ``pytest`` are missing, not stubs, so that pytest (``pytestmark``),
#: ``copy`` and ``pickle`` see plain objects.
#: A literal assigned at module level longer than this (source characters) is a stub.
MAX_LITERAL = 20_000
HELPERS = '''
import sys as _sys


def _importing():
    """A module is being imported (importlib marks its spec while its body runs): a call
    now is a decorator being made, not a test's call. No frames are read: that alone is
    evidence the Evaluator holds against a candidate."""
    for module in list(_sys.modules.values()):
        if getattr(getattr(module, "__spec__", None), "_initializing", False):
            return True
    return False


def _PASS(*args, **kwargs):
    """What a call at import time gets, so that the tests still collect: a decorator that
    changes nothing (a function, as the reference's decorator factories return)."""
    if len(args) == 1 and not kwargs and callable(args[0]):
        return args[0]
    return _PASS


def _make(_name):
    def function(*args, **kwargs):
        if _importing():
            return _PASS
        return _answer(_name, args, kwargs)

    function.__name__ = _name.rsplit(".", 1)[-1]
    return function


def _hidden(name):
    return name.startswith(("_", "pytest"))


def _named(f):
    """The stub of the ``def`` it decorates, answering under that name. Names stay
    identifiers in the stub's text, never string literals (which a scan would take for
    inputs copied from the tests)."""
    return _make(f.__qualname__)


def _method(f):
    name = f.__qualname__

    def method(self, *args, **kwargs):
        return _answer(name, args, kwargs)

    return method


def _coerced(f):
    """A special method whose answer ``f`` turns into a value of the type Python wants."""
    name = f.__qualname__

    def method(self, *args, **kwargs):
        return f(self, _answer(name, args, kwargs))

    return method


def _getter(f):
    name = f.__qualname__
    return property(lambda self: _answer(name, (), {}))


class _Shape(type):
    def __getattr__(cls, name):
        if _hidden(name):
            raise AttributeError(name)
        return _make(cls.__name__ + "." + name)


class _Stub(metaclass=_Shape):
    def __init__(self, *args, **kwargs):
        if not _importing():
            _answer(type(self).__name__, args, kwargs)

    def __class_getitem__(cls, item):
        return cls

    def __getattr__(self, name):
        if _hidden(name):
            raise AttributeError(name)
        return _make(type(self).__name__ + "." + name)
'''

#: Special methods whose result Python checks: the stub's answer is coerced, or a neutral
#: value stands in, so that ``len()``, ``iter()``, ``repr()`` never raise on their own.
_COERCED = {
    "__len__": "v if type(v) is int and v >= 0 else 0",
    "__bool__": "bool(v)",
    "__contains__": "bool(v)",
    "__iter__": "iter(v) if isinstance(v, (list, tuple, set, dict, str)) else iter(())",
    "__repr__": "v if type(v) is str else object.__repr__(self)",
    "__str__": "v if type(v) is str else object.__repr__(self)",
    "__exit__": "None",
}
#: Special methods answered as they are; any other special method is left to ``object``.
_ANSWERED = frozenset(
    {
        *("__getitem__", "__setitem__", "__delitem__", "__missing__", "__call__", "__enter__"),
        *("__next__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__add__"),
        *("__sub__", "__mul__", "__truediv__", "__floordiv__", "__mod__", "__and__", "__or__"),
        *("__xor__", "__neg__", "__abs__"),
    }
)


def definitions(source: Path, package: str | None) -> str:
    """The stub text for the reference module at ``source``: its classes, functions,
    assigned names and own-package imports, in the reference's order. ``package`` is the
    top-level package's name (None for a single-file module)."""
    tree = ast.parse(source.read_text(encoding="utf-8"), str(source))
    classes = {n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
    bound: set[str] = set()
    out: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            out.append(_class(node, bound, classes))
            bound.add(node.name)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.append(_stub_def(node.name))
            bound.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            out.append(_assigned(node, bound))
        elif isinstance(node, ast.ImportFrom) and _own(node, package):
            out.append(ast.unparse(node) + "\n")
            bound.update(a.asname or a.name for a in node.names)
    return "".join(out)


def _own(node: ast.ImportFrom, package: str | None) -> bool:
    """An import of the reference's own modules (whose stubs exist beside this one)."""
    if node.level > 0:
        return package is not None
    return package is not None and (node.module or "").split(".")[0] == package


def _assigned(node: ast.Assign | ast.AnnAssign, bound: set[str]) -> str:
    """A name assigned a literal keeps its value: it is data a test may read while it is
    collected (``parametrize([(w,) for w in lib.UNCOUNTABLES])``, ``from ._version import
    __version__``), not code a strategy answers for. Other names become stubs."""
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    names = [t.id for t in targets if isinstance(t, ast.Name)]
    literal = _literal_source(node.value)
    names = [
        n
        for n in names
        if not (n.startswith("__") and n.endswith("__")) or (literal and n != "__all__")
    ]
    out = []
    for name in names:
        if literal is not None:
            out.append(f"{name} = {literal}\n")
        elif isinstance(node.value, ast.Name) and node.value.id in bound:
            out.append(f"{name} = {node.value.id}\n")  # an alias keeps what it names
        else:
            out.append(_stub_def(name))
        bound.add(name)
    return "".join(out)


def _literal_source(value: ast.expr | None) -> str | None:
    """The source of a literal value (what ``ast.literal_eval`` reads), None otherwise or
    when longer than :data:`MAX_LITERAL`."""
    if value is None:
        return None
    try:
        ast.literal_eval(value)
    except (ValueError, TypeError, SyntaxError, RecursionError):
        return None
    text = ast.unparse(value)
    return text if len(text) <= MAX_LITERAL else None


def _class(node: ast.ClassDef, bound: set[str], classes: set[str]) -> str:
    """A stub class: bases that are stub classes already bound here, else ``_Stub``."""
    bases = [b.id for b in node.bases if isinstance(b, ast.Name) and b.id in bound & classes] or [
        "_Stub"
    ]
    lines = [f"class {node.name}({', '.join(dict.fromkeys(bases))}):\n"]
    for item in node.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            lines.append(_member(item))
    if any("def __eq__(" in line for line in lines):
        lines.append("    __hash__ = object.__hash__\n")
    if not "".join(lines[1:]):
        lines.append("    pass\n")
    return "".join(lines) + "\n\n"


def _stub_def(name: str, indent: str = "", decorator: str = "_named") -> str:
    return f"{indent}@{decorator}\n{indent}def {name}(*args, **kwargs):\n{indent}    pass\n"


def _member(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    name = node.name
    decorators = {ast.unparse(d) for d in node.decorator_list}
    if decorators & {"property", "functools.cached_property", "cached_property"}:
        return f"    @_getter\n    def {name}(self):\n        pass\n"
    if any(d.endswith(".setter") for d in decorators):
        return f"    @{name}.setter\n    def {name}(self, value):\n        pass\n"
    if any(d.endswith(".deleter") for d in decorators):
        return ""
    if decorators & {"staticmethod", "classmethod"}:
        return "    @staticmethod\n" + _stub_def(name, "    ")
    if name.startswith("__") and name.endswith("__"):
        if name in _COERCED:
            return f"    @_coerced\n    def {name}(self, v):\n        return {_COERCED[name]}\n"
        if name not in _ANSWERED:
            return ""
    return _stub_def(name, "    ", "_method")
