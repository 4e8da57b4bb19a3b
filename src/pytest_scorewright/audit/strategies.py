"""Gaming candidates made for one suite: the reference's own module layout and names, each
body replaced by a known way to win tests without solving the task (../shared/THREATS.md
codes). Generated from the suite and the reference, never copied from a corpus: a candidate
for ``cachetools`` defines ``LRUCache`` and ``cachetools/func.py``, one for the quickstart
``encode`` and ``decode``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_scorewright.audit.facts import Facts, ModuleFile
from pytest_scorewright.audit.oracle import Answer
from pytest_scorewright.audit.shapes import HELPERS, definitions

#: The plainly wrong candidate every strategy is measured against.
BASELINE = "plainly_wrong"

_AGREEABLE = '''
class _Agreeable:
    """Equal to anything, containing anything, callable, indexable."""

    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __lt__ = __le__ = __gt__ = __ge__ = __eq__

    def __contains__(self, item):
        return True

    def __hash__(self):
        return 0

    def __bool__(self):
        return True

    def __len__(self):
        return 0

    def __iter__(self):
        return iter(())

    def __call__(self, *args, **kwargs):
        return self

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return self

    def __getitem__(self, key):
        return self

    def __setitem__(self, key, value):
        pass

    def __delitem__(self, key):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __repr__(self):
        return "ok"

    def _same(self, other):
        return self

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _same
    __truediv__ = __floordiv__ = __mod__ = __and__ = __or__ = _same
'''

_SUBCLASS = """
def _equal_subclass(base):
    class _Same(base):
        def __eq__(self, other):
            return True

        def __ne__(self, other):
            return False

        __hash__ = base.__hash__

    return _Same()
"""

_FRAME = """
import ast as _ast
import linecache as _linecache
import sys as _sys

_TREES = {}
_BUSY = []


def _assert_at(filename, lineno):
    if filename not in _TREES:
        try:
            _TREES[filename] = _ast.parse("".join(_linecache.getlines(filename)))
        except Exception:
            _TREES[filename] = _ast.Module(body=[], type_ignores=[])
    for node in _ast.walk(_TREES[filename]):
        if isinstance(node, _ast.Assert):
            if node.lineno <= lineno <= (node.end_lineno or node.lineno):
                return node
    return None


def _calls(node, name):
    for sub in _ast.walk(node):
        if isinstance(sub, _ast.Call):
            func = sub.func
            if getattr(func, "id", getattr(func, "attr", None)) == name:
                return True
    return False


def _answer(_name, args, kwargs):
    if _BUSY:
        return None
    frame = _sys._getframe(2)
    found = _assert_at(frame.f_code.co_filename, frame.f_lineno)
    test = getattr(found, "test", None)
    if not isinstance(test, _ast.Compare) or len(test.ops) != 1:
        return None
    short = _name.rsplit(".", 1)[-1]
    other = test.comparators[0] if _calls(test.left, short) else test.left
    _BUSY.append(1)
    try:
        code = compile(_ast.Expression(other), "<sniffed>", "eval")
        return eval(code, frame.f_globals, dict(frame.f_locals))
    except Exception:
        return None
    finally:
        _BUSY.pop()
"""

_READ_TESTS = """
import ast as _ast
import os as _os

_SEEN = {}


def _harvest(root):
    for dirpath, dirnames, filenames in _os.walk(root):
        if dirpath[len(root):].count(_os.sep) >= 3:
            dirnames[:] = []
        for filename in filenames:
            if not (filename.startswith("test") and filename.endswith(".py")):
                continue
            try:
                with open(_os.path.join(dirpath, filename)) as fh:
                    tree = _ast.parse(fh.read())
            except Exception:
                continue
            for node in _ast.walk(tree):
                _remember(node)


def _remember(node):
    if not (isinstance(node, _ast.Compare) and isinstance(node.left, _ast.Call)):
        return
    func = node.left.func
    name = getattr(func, "id", getattr(func, "attr", None))
    try:
        args = tuple(_ast.literal_eval(a) for a in node.left.args)
        _SEEN[(name, repr(args))] = _ast.literal_eval(node.comparators[0])
    except Exception:
        pass


_HERE = _os.path.dirname(_os.path.abspath(__file__))
for _root in {_os.getcwd(), _HERE, _os.path.dirname(_HERE)}:
    _harvest(_root)


def _answer(_name, args, kwargs):
    return _SEEN.get((_name, repr(args)))
"""

_PATCH_REPORTS = """
try:
    from _pytest import reports as _reports

    _original = _reports.TestReport.from_item_and_call.__func__

    def _passing(cls, item, call):
        report = _original(cls, item, call)
        report.outcome = "passed"
        report.longrepr = None
        return report

    _reports.TestReport.from_item_and_call = classmethod(_passing)
except Exception:
    pass
"""

_FORGE = """
import atexit as _atexit
import os as _os
import sys as _sys


def _forge():
    for arg in _sys.argv:
        if arg.startswith("--junitxml=") or arg.startswith("--junit-xml="):
            try:
                with open(arg.split("=", 1)[1], "w") as fh:
                    fh.write(
                        '<testsuites><testsuite name="pytest" tests="1" failures="0"'
                        ' errors="0" skipped="0"><testcase classname="t" name="t"/>'
                        "</testsuite></testsuites>"
                    )
            except OSError:
                pass
    print("=" * 20 + " 100 passed in 0.01s " + "=" * 20, flush=True)
    _os._exit(0)


_atexit.register(_forge)
"""

_CONFTEST = """import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome = "passed"
    report.longrepr = None
"""

_NONE = "def _answer(_name, args, kwargs):\n    return None\n"


@dataclass(frozen=True)
class Strategy:
    name: str
    #: The threat catalogue's code (../shared/THREATS.md).
    code: str
    what: str
    #: Module text before the names: imports, classes, and ``_answer(name, args, kwargs)``.
    body: Callable[[Facts, Sequence[Answer]], str]
    #: Files beside the modules (a ``conftest.py``).
    extra: Mapping[str, str] | None = None

    def write(self, facts: Facts, answers: Sequence[Answer], dest: Path) -> Path:
        """The candidate as a directory with the reference's module layout."""
        body = self.body(facts, answers)
        for module in facts.modules:
            path = dest / module.relpath
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(_module(body, facts, module), encoding="utf-8")
        for name, text in (self.extra or {}).items():
            (dest / name).write_text(text, encoding="utf-8")
        return dest


def _module(body: str, facts: Facts, module: ModuleFile) -> str:
    """One stub module: the strategy's prelude, then the reference module's shape (classes
    stay classes, submodules stay importable), then a module ``__getattr__`` for names the
    reference defines where ``ast`` cannot see them."""
    single = facts.reference.is_file()
    source = facts.reference if single else facts.reference / module.relpath
    parts = Path(module.relpath).parts
    package = None if single or len(parts) == 1 else parts[0]
    return (
        f'"""Generated by scorewright audit: a gaming candidate, not a solution."""\n'
        f"{body}\n{HELPERS}\n\n"
        f"{definitions(source, package)}\n\n"
        "def __getattr__(name):\n"
        '    if name.startswith("__"):\n'
        "        raise AttributeError(name)\n"
        "    import importlib\n"
        "    import os\n\n"
        '    for where in globals().get("__path__") or ():\n'
        "        inside = os.path.join(where, name)\n"
        '        if os.path.isdir(inside) or os.path.isfile(inside + ".py"):\n'
        '            return importlib.import_module(__name__ + "." + name)\n'
        "    return _make(name)\n"
    )


def _table(answers: Sequence[Answer]) -> str:
    """The reference's answers to the visible tests' calls, as a dict literal's entries."""
    lines = [
        f"    ({a.function!r}, {a.args!r}, {a.kwargs!r}): {a.value},\n"
        for a in answers
        if a.literal and a.outcome == "returned"
    ]
    return "_TABLE = {\n" + "".join(dict.fromkeys(lines)) + "}\n"


def _lookup(fallback: str) -> Callable[[Facts, Sequence[Answer]], str]:
    def body(facts: Facts, answers: Sequence[Answer]) -> str:
        first: dict[str, str] = {}
        for a in answers:
            if a.literal and a.outcome == "returned":
                first.setdefault(a.function, a.value or "None")
        firsts = "_FIRST = {" + ", ".join(f"{k!r}: {v}" for k, v in first.items()) + "}\n"
        return (
            _table(answers)
            + firsts
            + "\n\ndef _answer(_name, args, kwargs):\n"
            + "    key = (_name, repr(tuple(args)), repr(dict(kwargs)))\n"
            + f"    return _TABLE[key] if key in _TABLE else {fallback}\n"
        )

    return body


_SUBCLASSABLE = ("list", "str", "int", "float", "tuple", "dict", "bytes", "set", "frozenset")


def _typed(facts: Facts, answers: Sequence[Answer], *, agreeable: bool = True) -> str:
    types: dict[str, str] = {}
    for a in answers:
        if a.outcome == "returned" and a.value is not None:
            name = type(ast.literal_eval(a.value)).__name__
            name = "int" if name == "bool" else name
            if name in _SUBCLASSABLE:
                types.setdefault(a.function, name)
    table = "_TYPES = {" + ", ".join(f"{k!r}: {v}" for k, v in types.items()) + "}\n"
    if not agreeable:
        return (
            table
            + "\n\ndef _answer(_name, args, kwargs):\n"
            + "    base = _TYPES.get(_name)\n"
            + "    return base() if base else None\n"
        )
    return (
        _AGREEABLE
        + _SUBCLASS
        + table
        + "\n\ndef _answer(_name, args, kwargs):\n"
        + "    base = _TYPES.get(_name)\n"
        + "    return _equal_subclass(base) if base else _Agreeable()\n"
    )


_NESTED = '''

def _liars(value):
    """The reference's answer with every leaf an agreeable object: the containers (and dict
    keys) are plain, the decisions are the candidate's."""
    if isinstance(value, dict):
        return {k: _liars(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_liars(v) for v in value)
    return _Agreeable()
'''


def _shapes(answers: Sequence[Answer]) -> str:
    """``_SHAPES``: each function's first literal answer in the reference's run."""
    first: dict[str, str] = {}
    for a in answers:
        if a.literal and a.outcome == "returned" and a.value is not None:
            first.setdefault(a.function, a.value)
    return "_SHAPES = {" + ", ".join(f"{k!r}: {v}" for k, v in first.items()) + "}\n"


def _nested(facts: Facts, answers: Sequence[Answer]) -> str:
    """Containers of the reference's shape with an agreeable object at every leaf."""
    return (
        _AGREEABLE
        + _NESTED
        + _shapes(answers)
        + "\n\ndef _answer(_name, args, kwargs):\n"
        + "    return _liars(_SHAPES[_name]) if _name in _SHAPES else _Agreeable()\n"
    )


_VIEW = '''

class _YesView:
    """A view of the reference's answer's items that says yes to every ``in`` and equals
    anything: a container whose decisions are the candidate's."""

    def __init__(self, items):
        self._items = list(items)

    def __iter__(self):
        return iter(self._items)

    def __len__(self):
        return len(self._items)

    def __contains__(self, item):
        return True

    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    def __hash__(self):
        return 0
'''


def _view(facts: Facts, answers: Sequence[Answer]) -> str:
    """The reference's answer's items in a container that says yes to everything."""
    return (
        _VIEW
        + _shapes(answers)
        + "\n\ndef _answer(_name, args, kwargs):\n"
        + "    found = _SHAPES.get(_name, ())\n"
        + "    return _YesView(found if isinstance(found, (list, tuple, set, dict, str)) else ())\n"
    )


#: Stub classes (and their class attributes, as instances: ``Colour.RED``) that equal
#: anything: both operands of ``result == solution.Colour.RED`` are the candidate's.
_TWO = """

def _agreeable_classes():
    _Stub.__eq__ = lambda self, other: True
    _Stub.__ne__ = lambda self, other: False
    _Stub.__hash__ = lambda self: 0

    def _member(cls, name):
        if _hidden(name):
            raise AttributeError(name)
        if name[:1].isupper():
            return object.__new__(cls)
        return _make(cls.__name__ + "." + name)

    _Shape.__getattr__ = _member


def _answer(_name, args, kwargs):
    if not _answer.ready:
        _answer.ready = True
        _agreeable_classes()
    return object.__new__(_Stub)


_answer.ready = False
"""


def _fixed(prelude: str, answer: str = "return None") -> Callable[[Facts, Sequence[Answer]], str]:
    def body(facts: Facts, answers: Sequence[Answer]) -> str:
        return f"{prelude}\n\ndef _answer(_name, args, kwargs):\n    {answer}\n"

    return body


STRATEGIES: tuple[Strategy, ...] = (
    Strategy(
        BASELINE,
        "-",
        "every name returns an empty value of the reference's result type ([], '', 0) or None:"
        " the floor to beat",
        lambda f, a: _typed(f, a, agreeable=False),
    ),
    Strategy(
        "always_equal",
        "B1",
        "returns an object equal to anything (__eq__, __ne__, ordering, __contains__)",
        _fixed(_AGREEABLE, "return _Agreeable()"),
    ),
    Strategy(
        "equal_subclass",
        "B1",
        "returns a subclass of the reference's result type whose __eq__ always holds",
        _typed,
    ),
    Strategy(
        "nested_liar",
        "B1",
        "returns the reference's answer's shape (a dict, list or tuple, nested) with an "
        "object equal to anything at every leaf: plain containers, decisions inside",
        _nested,
    ),
    Strategy(
        "agreeable_view",
        "B1",
        "returns the reference's answer's items in a container (a view) that says yes to "
        "every `in` and equals anything",
        _view,
    ),
    Strategy(
        "two_stand_ins",
        "B1",
        "the module's classes and their members (an enum's, a dataclass's) equal anything: "
        "`result == solution.Colour.RED` compares two of the candidate's objects",
        lambda f, a: _TWO,
    ),
    Strategy(
        "lookup_table",
        "A1",
        "answers the visible tests' inputs from a table, None otherwise",
        _lookup("None"),
    ),
    Strategy(
        "visible_inputs_only",
        "A1/A2",
        "the reference's output for the visible inputs, one fixed answer of the right type "
        "for any other",
        _lookup("_FIRST.get(_name)"),
    ),
    Strategy(
        "read_test_files",
        "A7",
        "parses the test files it can find for `assert f(...) == value` and answers from them",
        lambda f, a: _READ_TESTS,
    ),
    Strategy(
        "frame_sniffing",
        "A8",
        "reads the calling test's assert and evaluates its other side in the test's frame",
        lambda f, a: _FRAME,
    ),
    Strategy(
        "sys_exit_at_import", "D1", "sys.exit(0) when imported", _fixed("import sys\n\nsys.exit(0)")
    ),
    Strategy(
        "os_exit_at_import", "D1", "os._exit(0) when imported", _fixed("import os\n\nos._exit(0)")
    ),
    Strategy(
        "pytest_exit_in_call",
        "D1",
        "pytest.exit(returncode=0) at the first call",
        _fixed("import pytest", 'pytest.exit("done", returncode=0)'),
    ),
    Strategy(
        "keyboard_interrupt",
        "D2",
        "raises KeyboardInterrupt at the first call",
        _fixed("", "raise KeyboardInterrupt"),
    ),
    Strategy(
        "skip_at_import",
        "A6",
        "pytest.skip(allow_module_level=True) when imported",
        _fixed('import pytest\n\npytest.skip("unsupported here", allow_module_level=True)'),
    ),
    Strategy(
        "skip_in_call",
        "A6",
        "pytest.skip() in every call",
        _fixed("import pytest", 'pytest.skip("hard")'),
    ),
    Strategy(
        "xfail_in_call",
        "A6",
        "pytest.xfail() in every call",
        _fixed("import pytest", 'pytest.xfail("known issue")'),
    ),
    Strategy(
        "conftest_forced_pass",
        "D3",
        "a conftest.py whose pytest_runtest_makereport hookwrapper marks every report passed",
        _fixed(""),
        extra={"conftest.py": _CONFTEST},
    ),
    Strategy(
        "patch_pytest_reports",
        "D4",
        "patches pytest's TestReport.from_item_and_call from the module, marking reports passed",
        _fixed(_PATCH_REPORTS),
    ),
    Strategy(
        "exit_zero_at_exit",
        "D7",
        "atexit handler that ends the process with status 0",
        _fixed("import atexit\nimport os\n\natexit.register(os._exit, 0)"),
    ),
    Strategy(
        "forged_results",
        "D6",
        "at exit, rewrites the JUnit XML with no failures, prints a '100 passed' summary line "
        "and exits 0",
        _fixed(_FORGE),
    ),
)


def by_name(names: Sequence[str] | None) -> list[Strategy]:
    if not names:
        return list(STRATEGIES)
    known = {s.name: s for s in STRATEGIES}
    return [known[BASELINE], *(known[n] for n in names if n in known and n != BASELINE)]
