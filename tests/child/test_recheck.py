"""Re-checked assertions without a sandbox: the instrumented bytecode of a real test module,
run here with a pipe for the channel, sends what it should; operands are encoded from builtin
types only; the parent decodes and evaluates them with builtin semantics."""

from __future__ import annotations

import collections
import importlib.util
import marshal
import os
import sys
import types
import unittest
import unittest.mock
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from pytest_scorewright.child.shared.monitor import Monitor
from pytest_scorewright.child.test_process import recheck as child
from pytest_scorewright.integrity import recheck_evidence as parent
from pytest_scorewright.protocol import wire
from pytest_scorewright.protocol.channel import FrameReader
from pytest_scorewright.suite.rewritten import rewritten_suite

SUITE = '''
"""A trusted test module."""
import unittest


def f(x):
    return 3


def test_compares():
    assert f(1) == 3
    assert "b" in ["a", "b"]
    assert f(2) is not None
    assert not []
    for i in range(2):
        assert i < 5


def test_fails():
    assert f(1) == 4


class Case(unittest.TestCase):
    def test_unittest(self):
        self.assertEqual(f(1), 3)
        self.assertTrue([1])


class Approximate(unittest.TestCase):
    def assertEqual(self, first, second, msg=None):  # the suite's own helper, not unittest's
        super().assertEqual(round(first), round(second), msg)

    def test_helper(self):
        self.assertEqual(2.9, 3.1)
'''


@pytest.fixture
def channel() -> Iterator[int]:
    read, write = os.pipe()
    child.attach(write, None)
    child.new_test()
    yield read
    child.attach(None, None)  # type: ignore[arg-type]
    os.close(read)
    os.close(write)


def _messages(read: int, *, calls: bool = False) -> list[dict[str, Any]]:
    """What arrived: the re-checked assertions (and the module's announcement), or with
    ``calls`` only the call results."""
    return [m for m in _frames(read) if (m.get("op") == "returned") is calls]


def _frames(read: int) -> list[dict[str, Any]]:
    os.set_blocking(read, False)
    data = b""
    while True:
        try:
            chunk = os.read(read, 65536)
        except BlockingIOError:
            break
        if not chunk:
            break
        data += chunk
    return FrameReader().feed(data)


def _load(tmp_path: Path) -> types.ModuleType:
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_sample.py").write_text(SUITE)
    made = rewritten_suite(tests)
    (name,) = made
    # pytest's cache file, made here a moment ago: a 16-byte header, then the code object.
    code = marshal.loads(made[name][16:])  # noqa: S302
    module = types.ModuleType("test_sample")
    module.__file__ = str(tests / "test_sample.py")
    exec(code, module.__dict__)  # noqa: S102 - the trusted module's own bytecode
    return module


def test_passing_assertions_send_their_operands_and_failing_ones_send_nothing(
    tmp_path: Path, channel: int
) -> None:
    module = _load(tmp_path)
    assert _messages(channel) == [{"type": wire.INSTRUMENTED, "module": "test_sample.py"}]
    module.test_compares()
    sent = [(m["site"].split(":", 1)[1], m["op"], m["sides"]) for m in _messages(channel)]
    assert sent == [
        ("11:4", "==", [{"v": 3}, {"v": 3}]),
        ("12:4", "in", [{"v": "b"}, {"v": ["a", "b"]}]),
        ("13:4", "is not None", [{"v": 3}]),
        ("14:4", "not", [{"v": []}]),
        ("16:8", "<", [{"v": 0}, {"v": 5}]),
        ("16:8", "<", [{"v": 1}, {"v": 5}]),
    ]
    with pytest.raises(AssertionError) as info:
        module.test_fails()
    assert "where 3 = f(1)" in str(info.value)  # pytest's own message, untouched
    assert _messages(channel) == []


RESULTS_SUITE = """
import collections
import solution

Pair = collections.namedtuple("Pair", "a b")


def test_results():
    solution.plain()
    assert solution.own() is not None
    solution.pair()
    solution.text()
    solution.plain()
    for _ in range(3):
        solution.own()
    Pair(1, 2)
    solution.color()
"""

RESULTS_CANDIDATE = """
import collections
import enum


class Color(str, enum.Enum):
    RED = "red"


def color():
    return Color.RED


class Own:
    pass


class Text(str):
    def startswith(self, *args):
        return True


Pair = collections.namedtuple("Pair", "a b")


def plain():
    return [1, 2]


def own():
    return Own()


def pair():
    return Pair(1, 2)


def text():
    return Text("x")
"""


def test_every_call_in_the_tests_says_once_per_site_whether_it_returned_the_candidates_own(
    tmp_path: Path, channel: int
) -> None:
    candidate = tmp_path / "candidate"
    candidate.mkdir()
    (candidate / "solution.py").write_text(RESULTS_CANDIDATE)
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_results.py").write_text(RESULTS_SUITE)
    made = rewritten_suite(tests)
    code = marshal.loads(next(iter(made.values()))[16:])  # noqa: S302
    spec = importlib.util.spec_from_file_location("solution", candidate / "solution.py")
    assert spec is not None
    assert spec.loader is not None
    solution = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(solution)
    module = types.ModuleType("test_results")
    module.__dict__["solution"] = solution
    monitor = cast(Monitor, types.SimpleNamespace(candidate_dir=f"{candidate}/"))
    write = child._channel.fd  # the write end the fixture attached
    assert write is not None
    child.attach(write, monitor)  # the same pipe, with a monitor that knows the candidate
    try:
        sys.modules["solution"] = solution
        exec(code, module.__dict__)  # noqa: S102 - the trusted module's own bytecode
        _frames(channel)
        module.test_results()
    finally:
        sys.modules.pop("solution", None)
    sent = [(m["site"].split(":", 1)[1], m["sides"][0]) for m in _messages(channel, calls=True)]
    # The candidate's own class and its str subclass with a method of its own count; its
    # namedtuple and its str Enum (a plain tuple's and str's behaviour: the Enum's own
    # methods are the standard library's) and the test's own do not. Once per site.
    assert sent == [
        ("9:4#0", {"v": None}),
        ("10:11#0", {"np": "solution.Own", "own": True}),
        ("11:4#0", {"v": None}),
        ("12:4#0", {"np": "solution.Text", "own": True}),
        ("13:4#0", {"v": None}),
        ("14:13#0", {"v": None}),
        ("15:8#0", {"np": "solution.Own", "own": True}),
        ("16:4#0", {"v": None}),
        ("17:4#0", {"v": None}),
    ]


def test_unittest_assertions_are_rechecked_only_when_they_are_unittests_own(
    tmp_path: Path, channel: int
) -> None:
    module = _load(tmp_path)
    _messages(channel)
    unittest.TextTestRunner(stream=open(os.devnull, "w"), verbosity=0).run(  # noqa: SIM115
        unittest.defaultTestLoader.loadTestsFromModule(module)
    )
    sent = sorted((m["op"], str(m["sides"])) for m in _messages(channel))
    # The helper's own assertEqual(2.9, 3.1) is not unittest's, so it is not re-checked
    # (2.9 != 3.1); the unittest call inside it, on the rounded values, is.
    assert sent == [
        ("==", "[{'v': 3}, {'v': 3}]"),
        ("==", "[{'v': 3}, {'v': 3}]"),
        ("truth", "[{'v': [1]}]"),
    ]


class _Point(collections.namedtuple("_Point", "x y")):
    pass


class _Forged(int):
    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = int.__hash__


class _Name(str):
    """A plain subclass: it changes nothing about comparing."""


def _side(value: Any, candidate_dir: str = "/nowhere/") -> dict[str, Any]:
    monitor = cast(Monitor, types.SimpleNamespace(candidate_dir=candidate_dir))
    return child._side(value, "==", monitor)


def test_operands_are_plain_data_or_named_never_asked_for_their_own_value() -> None:
    assert _side(_Point(1, 2)) == {"v": {"t": [1, 2]}}
    assert _side(_Name("x")) == {"v": "x"}
    assert _side({(1, "a"): {2.5, None}}) == {"v": {"d": [[{"t": [1, "a"]}, {"s": [2.5, None]}]]}}
    assert _side(_Forged(0)) == {"np": f"{__name__}._Forged", "own": False}
    here = str(Path(__file__).parent) + "/"
    assert _side(_Forged(0), candidate_dir=here) == {"np": f"{__name__}._Forged", "own": True}
    assert _side(unittest.mock.ANY)["np"] == "unittest.mock._ANY"
    assert _side(list(range(10_000))) == {"skip": "large"}
    assert _side(10**5000)["v"] == {"ix": format(10**5000, "x")}  # re-checked exactly
    assert _side(10**50000) == {"skip": "large"}  # its digits count against the budget


def test_an_unframeable_operand_skips_the_recheck_and_never_fails_the_test(channel: int) -> None:
    child.check("t.py:1:0", "==", "\ud800", "\ud800")  # a lone surrogate: not UTF-8
    assert _messages(channel) == []


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        7,
        2**60,
        -0.0,
        1e300,
        "é",
        b"\x00\xff",
        [1, [2]],
        (1, (2,)),
        {1: "a"},
        {1, 2},
        frozenset({"x"}),
        {"k": (1.5, [None])},
    ],
)
def test_what_the_child_encodes_the_parent_decodes_to_an_equal_value(value: Any) -> None:
    side = parent.read_side(_side(value))
    assert side.plain
    assert side.value == value
    assert type(side.value) is type(value)


@pytest.mark.parametrize(
    ("op", "values", "expected"),
    [
        ("==", [1, True], True),
        ("==", [(1, 2), [1, 2]], False),
        ("!=", ["a", "b"], True),
        ("in", [2, {1: 0, 2: 0}], True),
        ("not in", ["z", "abc"], True),
        ("is None", [None], True),
        ("is not None", [0], True),
        ("truth", [[]], False),
        ("not", [""], True),
        ("<", [1, 2.5], True),
        ("in", [1, 5], None),  # builtins refuse: it raised in the child too
        ("==", [[float("nan")], [float("nan")]], None),  # identity made it equal there
    ],
)
def test_the_parent_evaluates_with_builtin_semantics(
    op: str, values: list[Any], expected: bool | None
) -> None:
    sides = [parent.read_side(_side(v)) for v in values]
    assert parent.holds(op, sides) is expected


def test_what_cannot_be_read_is_undecodable() -> None:
    for raw in ({}, {"v": {"weird": 1}}, {"v": {"a": 1, "b": 2}}, {"np": 5}, "x"):
        with pytest.raises(parent.Undecodable):
            parent.read_side(raw)


def test_the_module_registers_what_it_defines_with_the_monitor(tmp_path: Path) -> None:
    seen: dict[str, Any] = {}

    class Recorder:
        candidate_dir = "/nowhere/"

        def watch_module(self, path: str, namespace: dict[str, Any]) -> None:
            seen[path] = sorted(k for k in namespace if not k.startswith("@"))

        def check_oracles(self, paths: list[str]) -> None:
            pass

    read, write = os.pipe()
    try:
        child.attach(write, cast(Monitor, Recorder()))
        _load(tmp_path)
    finally:
        child.attach(None, None)  # type: ignore[arg-type]
        os.close(read)
        os.close(write)
    assert "f" in seen["test_sample.py"]
    assert "test_compares" in seen["test_sample.py"]
    assert importlib.util.find_spec("pytest_scorewright.child.test_process.recheck") is not None
