"""The boundary decides nothing for the candidate: with the candidate apart (the default),
values cross by value, and an object of the candidate's own where the reference gave plain
data is evidence. A property over generated suites: an agreeable liar (every operator and
method answers whatever passes) and a builtin-subclass liar pass no test that a plain wrong
value would not, whatever the assertion style."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_scorewright.evaluator import Evaluator
from pytest_scorewright.result import ScoreResult

pytestmark = pytest.mark.sandbox  # every test here forks real sandboxes


@dataclass(frozen=True)
class Style:
    """An assertion style: ``R`` is the candidate's result, ``E`` the expected value."""

    kind: str  # the expected value's type: float, str or list
    assertion: str


STYLES = [
    Style("float", "R == E"),
    Style("float", "abs(R - E) < 1e-9"),
    Style("float", "abs(E - R) < 1e-9"),
    Style("float", "math.isclose(R, E)"),
    Style("float", "R == pytest.approx(E)"),
    Style("float", "f'{R:.3f}' == f'{E:.3f}'"),
    Style("float", "round(R, 3) == round(E, 3)"),
    Style("float", "R != E + 1 and R == E"),
    Style("float", "R >= E and R <= E"),
    Style("str", "R == E"),
    Style("str", "R.startswith(E[:2])"),
    Style("str", "E[:2] in R"),
    Style("str", "len(R) == len(E)"),
    Style("str", "str(R) == E"),
    Style("str", "R.upper() == E.upper()"),
    Style("str", "R.split() == E.split()"),
    Style("str", "isinstance(R, str) and R == E"),
    Style("str", "'%s' % (R,) == E"),
    Style("list", "R == E"),
    Style("list", "sorted(R) == sorted(E)"),
    Style("list", "set(R) == set(E)"),
    Style("list", "all(x in R for x in E)"),
    Style("list", "len(R) == len(E)"),
    Style("list", "R[0] == E[0]"),
    Style("list", "max(R) == max(E)"),
    Style("list", "json.dumps(R) == json.dumps(E)"),
    Style("list", "[x for x in R] == E"),
    Style("list", "bool(R) and R == E"),
    Style("list", "not (R != E)"),
    Style("list", "all(x == y for x, y in zip(R, E)) and len(R) == len(E)"),
]

_WORDS = st.text(alphabet="abcdefghij", min_size=3, max_size=8)
_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "float": st.floats(min_value=1.0, max_value=1e6, allow_nan=False),
    "str": st.lists(_WORDS, min_size=1, max_size=3).map(" ".join),
    "list": st.lists(_WORDS, min_size=1, max_size=4, unique=True),
}

#: Every answer agrees, computed rather than constant, so that the source scan does not see
#: it: what catches it must be what the run observed.
AGREEABLE_LIAR = """
def _agree(self, other, *rest):
    return other == other


def _refuse(self, other, *rest):
    return other != other


def _zero(self, other):
    return other - other


def _nothing(self, *args):
    return float(len(args) - len(args))


def _itself(self, *args):
    return self


class Liar:
    __eq__ = __le__ = __ge__ = __contains__ = _agree
    __ne__ = __lt__ = __gt__ = _refuse
    __hash__ = object.__hash__
    __sub__ = __rsub__ = __add__ = __radd__ = __mul__ = __rmul__ = __truediv__ = _zero
    __abs__ = __float__ = _nothing
    __round__ = __getitem__ = _itself

    def __len__(self):
        return len(KEEP)

    def __bool__(self):
        return KEEP == KEEP

    def __iter__(self):
        return iter(KEEP[len(KEEP):])

    def __getattr__(self, name):
        return lambda *args, **kwargs: self

    def __str__(self):
        return "".join(KEEP[len(KEEP):])

    __format__ = _itself


KEEP = ["x"]


def f(i):
    return Liar()
"""

#: Subclasses of the expected types whose every method agrees, holding a wrong base value.
SUBCLASS_LIAR = """
class S(str):
    def __eq__(self, other): return True
    __hash__ = str.__hash__
    def __ne__(self, other): return False
    def startswith(self, *args): return True
    def __contains__(self, item): return True
    def __len__(self): return 99
    def upper(self): return self
    def split(self, *args): return self
    def __str__(self): return self
    def __mod__(self, other): return self


class F(float):
    def __eq__(self, other): return True
    __hash__ = float.__hash__
    def __ne__(self, other): return True
    def __sub__(self, other): return 0.0
    def __rsub__(self, other): return 0.0
    def __round__(self, n=None): return self
    def __format__(self, spec): return ""
    def __le__(self, other): return True
    def __ge__(self, other): return True


class L(list):
    def __eq__(self, other): return True
    __hash__ = None
    def __contains__(self, item): return True
    def __len__(self): return 99
    def __getitem__(self, key): return self
    def __iter__(self): return iter(())
    def __bool__(self): return True


BASES = {"float": F(-1.0), "str": S("zz"), "list": L(["zz"])}
"""

#: The same wrong base values, plain: what the subclass liar may earn at most.
PLAIN_WRONG = """
BASES = {"float": -1.0, "str": "zz", "list": ["zz"]}
"""


def _suite(root: Path, cases: list[tuple[Style, Any]]) -> None:
    tests = root / "tests"
    tests.mkdir(parents=True)
    lines = ["import json", "import math", "", "import pytest", "", "import solution", ""]
    for i, (style, expected) in enumerate(cases):
        check = style.assertion.replace("R", f"solution.f({i})").replace("E", repr(expected))
        lines += [f"def test_{i}():", f"    assert {check}", "", ""]
    (tests / "test_styles.py").write_text("\n".join(lines), encoding="utf-8")
    values = [expected for _, expected in cases]
    kinds = [style.kind for style, _ in cases]
    (root / "reference.py").write_text(
        f"VALUES = {values!r}\n\ndef f(i):\n    return VALUES[i]\n", encoding="utf-8"
    )
    kinds_line = f"KINDS = {kinds!r}\n"
    pick = "\ndef f(i):\n    return BASES[KINDS[i]]\n"
    (root / "agreeable.py").write_text(AGREEABLE_LIAR, encoding="utf-8")
    (root / "subclass.py").write_text(SUBCLASS_LIAR + kinds_line + pick, encoding="utf-8")
    (root / "plain.py").write_text(PLAIN_WRONG + kinds_line + pick, encoding="utf-8")


def _credited(result: ScoreResult) -> set[str]:
    return {t.nodeid for t in result.tests if t.credited and t.passed}


_CASES = st.lists(
    st.sampled_from(STYLES).flatmap(lambda s: st.tuples(st.just(s), _VALUES[s.kind])),
    min_size=3,
    max_size=8,
)


@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(cases=_CASES)
@pytest.mark.parametrize("isolation", ["auto", "in-process"])
def test_liars_pass_no_test_a_plain_wrong_value_would_not(
    isolation: str, cases: list[tuple[Style, Any]], tmp_path_factory: pytest.TempPathFactory
) -> None:
    root = tmp_path_factory.mktemp("styles")
    _suite(root, cases)
    reference = root / "reference.py"
    with Evaluator(root / "tests", reference=reference, isolation=isolation) as evaluator:
        # "auto" puts the candidate apart for a suite the reference passes apart.
        assert evaluator.isolated is (isolation == "auto")
        honest = evaluator.score(root / "reference.py")
        agreeable = evaluator.score(root / "agreeable.py")
        subclass = evaluator.score(root / "subclass.py")
        plain = evaluator.score(root / "plain.py")
    assert honest.signal("pass_rate") == 1.0
    assert not honest.integrity.reasons
    assert _credited(agreeable) == set(), agreeable.integrity.reasons
    assert agreeable.integrity.rejected
    codes = {r.code for r in agreeable.integrity.reasons}
    assert codes & {"returned_handle", "handle_given_value"}, codes
    assert _credited(subclass) <= _credited(plain), (
        [s.assertion for s, _ in cases],
        sorted(_credited(subclass) - _credited(plain)),
    )


HANDLES_REFERENCE = """
class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y

    def shifted(self, dx):
        return Point(self.x + dx, self.y)

    def __eq__(self, other):
        return isinstance(other, Point) and (self.x, self.y) == (other.x, other.y)

    def __sub__(self, other):
        return abs(self.x - other.x) + abs(self.y - other.y)


def make(x, y):
    return Point(x, y)
"""

HANDLES_TESTS = """
import solution

def test_fields():
    p = solution.make(1, 2)
    assert (p.x, p.y) == (1, 2)

def test_methods_take_values():
    assert solution.make(1, 2).shifted(3).x == 4

def test_objects_compare_with_objects():
    assert solution.make(1, 2) == solution.make(1, 2)
    assert solution.make(1, 2) - solution.make(4, 6) == 7
"""


def test_a_reference_that_returns_objects_leaves_honest_objects_unflagged(
    tmp_path: Path,
) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_points.py").write_text(HANDLES_TESTS, encoding="utf-8")
    (tmp_path / "reference.py").write_text(HANDLES_REFERENCE, encoding="utf-8")
    # Written another way (a dataclass), as an LLM might: the same objects' behaviour.
    (tmp_path / "candidate.py").write_text(
        textwrap.dedent(
            """
            from dataclasses import dataclass

            @dataclass
            class Point:
                x: int
                y: int

                def shifted(self, dx):
                    return Point(self.x + dx, self.y)

                def __sub__(self, other):
                    return abs(self.x - other.x) + abs(self.y - other.y)

            def make(x, y):
                return Point(x, y)
            """
        ),
        encoding="utf-8",
    )
    with Evaluator(tmp_path / "tests", reference=tmp_path / "reference.py") as evaluator:
        assert evaluator.isolated
        result = evaluator.score(tmp_path / "candidate.py")
    assert result.signal("pass_rate") == 1.0
    assert not result.integrity.flagged, result.integrity.reasons


SUBCLASSES = """
import collections

class Name(str):
    def shout(self):
        return self.upper()

Pair = collections.namedtuple("Pair", "a b")

def name():
    return Name("ada")

def pair():
    return Pair(1, 2)
"""


def test_a_builtin_subclass_crosses_as_its_plain_value(tmp_path: Path) -> None:
    # Its methods stay behind: the test process sees a fresh str (a namedtuple keeps its own
    # crossing, as a namedtuple of the test process's making).
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_types.py").write_text(
        "import solution\n\n"
        "def test_name_is_a_plain_str():\n"
        "    assert type(solution.name()) is str and solution.name() == 'ada'\n\n"
        "def test_pair_keeps_its_fields():\n"
        "    assert solution.pair().b == 2\n",
        encoding="utf-8",
    )
    (tmp_path / "solution.py").write_text(SUBCLASSES, encoding="utf-8")
    with Evaluator(tmp_path / "tests", reference=tmp_path / "solution.py") as evaluator:
        assert evaluator.isolated, evaluator.isolation_why
        result = evaluator.score(tmp_path / "solution.py")
    assert result.signal("pass_rate") == 1.0


def test_numpy_scalars_cross_as_plain_numbers(tmp_path: Path) -> None:
    # What numpy code returns where the tests expect a number: numpy's own item() makes it
    # one, so an honest numpy solution passes apart as it does under plain pytest.
    pytest.importorskip("numpy")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_sum.py").write_text(
        "import solution\n\n"
        "def test_total():\n    assert solution.total([1, 2, 3]) == 6\n\n"
        "def test_any():\n    assert solution.any_odd([2, 3]) is True\n",
        encoding="utf-8",
    )
    (tmp_path / "reference.py").write_text(
        "def total(xs):\n    return sum(xs)\n\ndef any_odd(xs):\n"
        "    return any(x % 2 for x in xs)\n",
        encoding="utf-8",
    )
    (tmp_path / "candidate.py").write_text(
        "import numpy as np\n\ndef total(xs):\n    return np.sum(np.array(xs))\n\n"
        "def any_odd(xs):\n    return np.any(np.array(xs) % 2 == 1)\n",
        encoding="utf-8",
    )
    with Evaluator(tmp_path / "tests", reference=tmp_path / "reference.py") as evaluator:
        assert evaluator.isolated
        result = evaluator.score(tmp_path / "candidate.py")
    assert result.signal("pass_rate") == 1.0
    assert not result.integrity.flagged, result.integrity.reasons
