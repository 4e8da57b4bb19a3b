"""The in-process mode's blind spots, each closed or made a reason: one hostile candidate per
spot, scored for real (tests/corpus has the ones that fit a corpus task: a UTF-7 coding
cookie, a traceback's frame under a built name, unittest.mock.ANY, code named after the
standard library or under a made-up name, marshalled code, the monitor switched off)."""

from __future__ import annotations

import py_compile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_scorewright.evaluator import Evaluator
from pytest_scorewright.integrity import static_scan
from pytest_scorewright.limits import Limits
from tests.corpus import ROOT

pytestmark = pytest.mark.sandbox  # every test here forks real sandboxes

TASK = ROOT / "numbers"
#: Reads `expected` out of the test's frame.
SNIFFER = """
import sys

def _expected():
    return sys._getframe(2).f_locals.get("expected")

def is_prime(n):
    return _expected()

def gcd(a, b):
    return _expected()

def fib(n):
    return _expected()
"""


@pytest.fixture(scope="module")
def evaluator() -> Iterator[Evaluator]:
    # In process: these are the blind spots of the mode where the candidate shares the test
    # process (with isolation by process, the default here, none of them reaches a test).
    with Evaluator(
        TASK / "tests",
        heldout=TASK / "heldout",
        reference=TASK / "reference",
        isolation="in-process",
    ) as ev:
        yield ev


def _codes(result: object) -> dict[str, str]:
    return {r.code: r.severity for r in result.integrity.reasons}  # type: ignore[attr-defined]


def test_a_candidate_shipped_only_as_bytecode_is_never_run_and_says_so(
    evaluator: Evaluator, tmp_path: Path
) -> None:
    source = tmp_path / "src" / "solution.py"
    source.parent.mkdir()
    source.write_text(SNIFFER)
    candidate = tmp_path / "candidate"
    candidate.mkdir()
    py_compile.compile(str(source), cfile=str(candidate / "solution.pyc"), doraise=True)
    result = evaluator.score(candidate)
    assert not result.ok  # not copied: the tests cannot import it, an honest failure
    assert result.signal("tests_passed") == 0
    codes = _codes(result)
    assert codes["unscanned"] == "hint"
    assert set(codes.values()) == {"hint"}  # an import error is no evidence
    unscanned = next(r for r in result.integrity.reasons if r.code == "unscanned")
    assert "solution.pyc" in unscanned.detail


def test_code_in_a_file_past_the_scan_cap_is_unscanned_and_still_watched(
    evaluator: Evaluator, tmp_path: Path
) -> None:
    candidate = tmp_path / "candidate"
    candidate.mkdir()
    padding = "# padding\n" * (static_scan.MAX_FILE_BYTES // 10 + 1)
    (candidate / "sniff.py").write_text(padding + SNIFFER)
    (candidate / "solution.py").write_text("from sniff import is_prime, gcd, fib\n")
    result = evaluator.score(candidate)
    codes = _codes(result)
    assert codes["unscanned"] == "hint"
    assert codes["frame_introspection"] == "gaming"  # the monitor sees it run
    assert result.integrity.rejected
    assert result.signal("pass_rate") == 0.0


SILENCERS = {
    "counter": "monitor.count = 10**9  # as if the cap were reached: nothing more is sent",
    "dedup": "monitor.seen.add('reads_tests')  # as if it had been reported already",
    "snapshot": "monitor.snapshot.clear()  # nothing left to compare",
    "channel": "monitor._send = lambda fd, message: None",
}


@pytest.mark.parametrize("how", sorted(SILENCERS))
def test_changing_the_monitors_state_from_plain_python_is_tamper_evidence(
    evaluator: Evaluator, tmp_path: Path, how: str
) -> None:
    candidate = tmp_path / "solution.py"
    candidate.write_text(
        textwrap.dedent(
            """
            import sys

            def _reach():
                config = sys.modules["_pytest.mark.structures"].MARK_GEN._config
                for plugin in config.pluginmanager.get_plugins():
                    monitor = getattr(plugin, "monitor", None)
                    if monitor is not None:
                        {silence}
                        with open(monitor.tests_dir + "test_numbers.py") as handle:
                            handle.read()

            def is_prime(n):
                _reach()
                return n in (2, 3, 17)

            def gcd(a, b):
                while b:
                    a, b = b, a % b
                return abs(a)

            def fib(n):
                a, b = 0, 1
                for _ in range(n):
                    a, b = b, a + b
                return a
            """
        ).replace("{silence}", SILENCERS[how])
    )
    result = evaluator.score(candidate)
    codes = _codes(result)
    assert codes.get("monitor_silenced") == "tamper", codes
    assert result.integrity.rejected
    assert not any(t.credited for t in result.tests)


HONEST_FAILURES = {
    "syntax_error": "def is_prime(n)\n    return n > 1\n",
    "import_error": "import no_such_module_anywhere\n",
    "script_exit": "import sys\nsys.exit('usage: solution.py N')\n",
    "hang": "def is_prime(n):\n    while True:\n        pass\n\ngcd = fib = is_prime\n",
    "crash": (
        "import sys\nsys.setrecursionlimit(10**7)\n\n"
        "def is_prime(n):\n    return is_prime(n + 1)\n\ngcd = fib = is_prime\n"
    ),
}


@pytest.mark.parametrize("kind", sorted(HONEST_FAILURES))
def test_honest_failures_are_errors_never_evidence(tmp_path: Path, kind: str) -> None:
    candidate = tmp_path / "solution.py"
    candidate.write_text(HONEST_FAILURES[kind])
    with Evaluator(
        TASK / "tests",
        heldout=TASK / "heldout",
        reference=TASK / "reference",
        limits=Limits(timeout_s=6),
    ) as evaluator:
        result = evaluator.score(candidate)
    if kind in ("hang", "crash"):
        # Each test's own limit cuts it, and the run stops after two: failed tests, no error.
        assert result.signal("pass_rate") == 0.0
    else:
        assert not result.ok
        assert result.error
    assert not result.integrity.flagged, [(r.code, r.detail) for r in result.integrity.reasons]
    assert not result.integrity.rejected
    assert {r.severity for r in result.integrity.reasons} <= {"hint"}
