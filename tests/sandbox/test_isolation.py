"""Isolation by process: the candidate runs in a process of its own, reached through proxies.

Each in-process trick of the red team's (frames, pytest's hooks, report patching, forging the
message stream, switching off the monitor, always-equal and lazy results, ``mock.ANY``) is
scored here as the honest work it contains: a wrong answer fails, whatever the candidate does
in its own process. tests/isolation_task is a suite of what must still work apart (scored
with its reference); the attack tests (tests/sandbox/test_sandbox_attacks.py) and the integrity
corpus run in both isolations too.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_scorewright.evaluator import Evaluator
from pytest_scorewright.limits import Limits
from pytest_scorewright.result import ScoreResult

pytestmark = pytest.mark.sandbox  # every test here forks real sandboxes

TASK = Path(__file__).parents[1] / "isolation_task"

REFERENCE = """
def add(a, b):
    return a + b
"""

TESTS = """
from solution import add

def test_small():
    expected = 3
    assert add(1, 2) == expected

def test_double():
    expected = 4
    assert add(2, 2) == expected

def test_mixed():
    expected = 4
    assert add(-1, 5) == expected
"""

#: Wrong answers dressed up: each must score what a wrong answer scores, 0.
TRICKS = {
    "frames through a traceback": """
        def add(a, b):
            try:
                raise ValueError
            except ValueError as exc:
                frame = getattr(exc.__traceback__, "tb_" + "frame")
            while frame is not None:
                if "expected" in frame.f_locals:
                    return frame.f_locals["expected"]
                frame = frame.f_back
            return 0
        """,
    "pytest's hooks from sys.meta_path": """
        import sys
        for finder in sys.meta_path:
            config = getattr(finder, "config", None)
            if config is not None:
                for plugin in config.pluginmanager.get_plugins():
                    if hasattr(plugin, "pytest_runtest_logreport"):
                        original = plugin.pytest_runtest_logreport
                        def forged(report, original=original):
                            report.outcome = "passed"
                            return original(report)
                        plugin.pytest_runtest_logreport = forged
        def add(a, b):
            return 0
        """,
    "report patching": """
        import _pytest.reports as reports
        original = reports.TestReport.from_item_and_call
        def forged(item, call):
            report = original(item, call)
            report.outcome, report.longrepr = "passed", None
            return report
        reports.TestReport.from_item_and_call = staticmethod(forged)
        def add(a, b):
            return 0
        """,
    "a forged message stream": """
        import json, os, struct
        def add(a, b):
            for name in os.listdir("/proc/self/fd"):
                for kind in ("report", "finish"):
                    body = json.dumps({"type": kind, "exitstatus": 0}).encode()
                    try:
                        os.write(int(name), struct.pack(">I", len(body)) + body)
                    except OSError:
                        pass
            return 0
        """,
    "the monitor switched off": """
        import gc
        for thing in gc.get_objects():
            if type(thing).__name__ == "Monitor":
                thing.busy = True
        def add(a, b):
            return 0
        """,
    "an always-equal object": """
        class Anything:
            def __eq__(self, other):
                return True
        def add(a, b):
            return Anything()
        """,
    "a lazy result": """
        class Lazy:
            def __init__(self, a, b):
                self.a, self.b = a, b
            def __eq__(self, other):
                return self.a + self.b == other
        def add(a, b):
            return Lazy(a, b)
        """,
    "unittest.mock.ANY": """
        from unittest import mock
        def add(a, b):
            return mock.ANY
        """,
    "reading the tests": """
        import os, re
        def add(a, b):
            root = os.path.dirname(os.getcwd())
            for top, _, files in os.walk(root):
                for name in files:
                    if name.startswith("test_"):
                        try:
                            text = open(os.path.join(top, name)).read()
                        except OSError:
                            continue
                        found = re.findall(r"expected = (\\d+)", text)
                        if found:
                            return int(found[0])
            return 0
        """,
    "killing every other process": """
        import os, signal
        def add(a, b):
            for entry in os.listdir("/proc"):
                if entry.isdigit() and int(entry) != os.getpid():
                    try:
                        os.kill(int(entry), signal.SIGKILL)
                    except OSError:
                        pass
            return 0
        """,
}


@pytest.fixture(scope="module")
def task(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("task")
    (root / "tests").mkdir()
    (root / "tests" / "test_add.py").write_text(TESTS)
    (root / "reference").mkdir()
    (root / "reference" / "solution.py").write_text(REFERENCE)
    return root


@pytest.fixture(scope="module")
def evaluator(task: Path) -> Iterator[Evaluator]:
    with Evaluator(
        task / "tests",
        reference=task / "reference",
        limits=Limits(timeout_s=10, memory_mb=512),
    ) as evaluator:
        assert evaluator.isolated, evaluator.isolation_why  # the default, auto, chose it
        yield evaluator


def _score(evaluator: Evaluator, tmp_path: Path, source: str) -> ScoreResult:
    candidate = tmp_path / "solution.py"
    candidate.write_text(textwrap.dedent(source))
    return evaluator.score(candidate)


@pytest.mark.parametrize("trick", sorted(TRICKS))
def test_an_in_process_trick_scores_as_the_wrong_answer_it_is(
    evaluator: Evaluator, tmp_path: Path, trick: str
) -> None:
    result = _score(evaluator, tmp_path, TRICKS[trick])
    assert result.limits is not None
    assert result.limits["sandbox"]["isolation"] == "process"
    # Whatever it did in its own process, no test of the trusted process passed.
    assert [t.outcome for t in result.tests] == ["failed"] * 3, [
        (t.outcome, t.message) for t in result.tests
    ]
    assert result.signal("pass_rate") == 0.0


def test_the_honest_answer_still_passes_beside_them(evaluator: Evaluator, tmp_path: Path) -> None:
    result = _score(evaluator, tmp_path, REFERENCE)
    assert result.signal("pass_rate") == 1.0
    assert not result.integrity.flagged, result.integrity.reasons


def test_what_a_suite_does_with_the_candidate_works_apart() -> None:
    # classes and objects, exceptions of its own and of the standard library, arguments
    # changed in place, callbacks, generators, printed output, warnings, enums, standard
    # library values, tmp_path files, monkeypatch and mock.patch (tests/isolation_task).
    with Evaluator(TASK / "tests", reference=TASK / "reference", isolation="process") as ev:
        result = ev.score(TASK / "reference")
    assert result.limits is not None
    assert result.limits["sandbox"]["isolation"] == "process"
    assert len(result.tests) >= 18
    assert [t.nodeid for t in result.tests if not t.passed] == []


def test_a_suite_that_needs_the_candidate_in_process_falls_back_and_says_why(
    tmp_path: Path,
) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_types.py").write_text(
        "import solution\n\n"
        "def test_value():\n    assert solution.make() == [1]\n\n"
        "def test_type():\n    assert solution.make().items == [1]\n"
    )
    # An object of its own that compares with a plain list: only in process can it.
    (tmp_path / "solution.py").write_text(
        "class Items:\n    def __init__(self, items):\n        self.items = items\n\n"
        "    def __eq__(self, other):\n        return self.items == other\n\n"
        "def make():\n    return Items([1])\n"
    )
    with Evaluator(tmp_path / "tests", reference=tmp_path / "solution.py") as evaluator:
        assert not evaluator.isolated
        assert "the reference fails with the candidate apart" in evaluator.isolation_why
        assert "test_types.py::test_value" in evaluator.isolation_why
        result = evaluator.score(tmp_path / "solution.py")
    assert result.signal("pass_rate") == 1.0
    assert result.limits is not None
    assert result.limits["sandbox"]["isolation"] == "in-process"
    assert "fails with the candidate apart" in result.limits["sandbox"]["isolation_why"]


def test_asking_for_isolation_the_suite_cannot_take_is_a_one_line_error(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_same.py").write_text(
        "import solution\n\ndef test_identity():\n    x = [1]\n    assert solution.same(x) is x\n"
    )
    (tmp_path / "solution.py").write_text("def same(x):\n    return x\n")
    with pytest.raises(Exception, match="with isolation by process") as info:
        Evaluator(
            tmp_path / "tests", reference=tmp_path / "solution.py", isolation="process"
        ).prepare()
    assert "\n" not in str(info.value)
    assert "use isolation 'auto' or 'in-process'" in str(info.value)
