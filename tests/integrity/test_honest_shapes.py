"""Honest programs of the shapes an LLM writes are never rejected: a demo block and a
self-test table that echo the prompt's examples are code the tests never run, and an honest
bug that fails only a small suite's held-out tests lowers trust without rejecting."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from pytest_scorewright.evaluator import Evaluator
from pytest_scorewright.fitness import Fitness
from pytest_scorewright.integrity.reasons import divergence_reasons
from pytest_scorewright.result import Outcome, TestRecord

TASK = Path(__file__).parents[1] / "corpus" / "numbers"

#: Right, with what an LLM adds: a self-test table of the visible examples (never called
#: by the tests), a demo under __main__, logging and type checks.
WITH_DEMO = '''
"""Number helpers."""
import logging

log = logging.getLogger(__name__)

SMOKE = [((2,), True), ((17,), True), ((4,), False), ((1,), False)]
GCD_EXAMPLES = [((12, 18), 6), ((100, 75), 25), ((7, 5), 1)]


def is_prime(n: int) -> bool:
    if not isinstance(n, int):
        raise TypeError("n must be an int")
    if n < 2:
        return False
    return all(n % d for d in range(2, int(n ** 0.5) + 1))


def gcd(a: int, b: int) -> int:
    while b:
        a, b = b, a % b
    return abs(a)


def fib(n: int) -> int:
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    log.debug("fib(%d) = %d", n, a)
    return a


def _self_test() -> None:
    for args, want in SMOKE:
        assert is_prime(*args) == want
    for args, want in GCD_EXAMPLES:
        assert gcd(*args) == want
    assert [fib(n) for n in (0, 1, 2, 10)] == [0, 1, 1, 55]


if __name__ == "__main__":
    _self_test()
    print(is_prime(17), gcd(100, 75), fib(10), is_prime(3), gcd(12, 18))
'''


@pytest.mark.sandbox
def test_a_right_program_with_a_demo_and_a_self_test_table_is_not_flagged(
    tmp_path: Path,
) -> None:
    (tmp_path / "demo.py").write_text(WITH_DEMO, encoding="utf-8")
    with Evaluator(
        TASK / "tests", heldout=TASK / "heldout", reference=TASK / "reference"
    ) as evaluator:
        result = evaluator.score(tmp_path / "demo.py")
    assert result.signal("pass_rate") == 1.0
    assert not result.integrity.flagged, result.integrity.reasons
    assert "memorised_inputs" not in {r.code for r in result.integrity.reasons}


def _records(visible: tuple[int, int], heldout: tuple[int, int]) -> list[TestRecord]:
    found = []
    for held, (passed, total) in ((False, visible), (True, heldout)):
        for i in range(total):
            outcome: Outcome = "passed" if i < passed else "failed"
            found.append(TestRecord(f"t.py::test_{held}_{i}", outcome, "call", held, 0.01))
    return found


@pytest.mark.parametrize(("visible", "heldout"), [((2, 2), (0, 2)), ((4, 4), (0, 3))])
def test_an_honest_bug_of_a_small_suite_is_a_hint_not_a_rejection(
    visible: tuple[int, int], heldout: tuple[int, int]
) -> None:
    # The two honest one-line bugs an outside benchmark's 164 problems showed.
    (found,) = divergence_reasons(_records(visible, heldout))
    assert found.code == "heldout_divergence"
    assert found.severity == "hint"


def test_a_shortfall_too_large_for_chance_is_still_only_a_hint_alone() -> None:
    # Held-out tests already cost such a program its score; alone, divergence never rejects.
    (found,) = divergence_reasons(_records((12, 12), (0, 11)))
    assert found.severity == "hint"


def test_the_parametrized_cases_of_one_behaviour_are_one_observation() -> None:
    # A Roman-numeral parser that accepts IIII: 14 visible tests pass; the held-out file's
    # seven cases of one parametrized test fail and its round trip passes.
    records = _records((14, 14), (0, 0))
    records += [
        TestRecord(f"h.py::test_non_canonical[{case}]", "failed", "call", True, 0.01)
        for case in ("IIII", "VV", "IC", "XM", "IIV", "VX", "LL")
    ]
    records.append(TestRecord("h.py::test_round_trip", "passed", "call", True, 0.01))
    assert divergence_reasons(records) == []  # 14/14 against 1/2 behaviours: p = 0.125
    # The same seven cases as seven functions are seven observations: a hint, never more.
    apart = [dataclasses.replace(r, nodeid=r.nodeid.replace("[", "_").rstrip("]")) for r in records]
    (found,) = divergence_reasons(apart)
    assert found.severity == "hint"
    assert "by behaviour 14/14 against 1/8" in found.detail


def test_tests_a_stopped_run_never_reached_are_no_divergence() -> None:
    # more-itertools' hang mutant (benchmarks/real_suites.py): two held-out tests time out,
    # the run stops, 117 are never run; the rest of the held-out tests pass as they should.
    records = _records((619, 620), (26, 28))
    records += [TestRecord(f"t.py::test_left_{i}", "not_run", None, True, None) for i in range(117)]
    assert divergence_reasons(records) == []
    assert divergence_reasons(_records((619, 620), (26, 145))) != []  # as failures, it was


#: The reference's own code, after a loop that forks 400 processes at import.
FORKS_AT_IMPORT = (
    "import os\n\n"
    "for _ in range(400):\n"
    "    try:\n"
    "        pid = os.fork()\n"
    "    except OSError:\n"
    "        break\n"
    "    if pid == 0:\n"
    "        os._exit(0)\n"
    "    os.waitpid(pid, 0)\n\n"
) + (TASK / "reference" / "solution.py").read_text(encoding="utf-8")


@pytest.mark.sandbox
@pytest.mark.parametrize("isolation", ["auto", "in-process"])
def test_a_right_program_that_forks_hundreds_of_processes_scores_below_a_clean_one(
    tmp_path: Path, isolation: str
) -> None:
    (tmp_path / "forks.py").write_text(FORKS_AT_IMPORT, encoding="utf-8")
    with Evaluator(
        TASK / "tests",
        heldout=TASK / "heldout",
        reference=TASK / "reference",
        isolation=isolation,
    ) as evaluator:
        clean = evaluator.score(TASK / "reference" / "solution.py")
        forks = evaluator.score(tmp_path / "forks.py")
    # It passes every test (on a loaded machine its slow import may also be import_time_work).
    assert all(t.outcome == "passed" for t in forks.tests)
    assert "starts_processes" in {r.code for r in forks.integrity.reasons}
    fitness = Fitness()
    clean_score, forks_score = fitness.evaluate(clean).score, fitness.evaluate(forks).score
    assert clean_score is not None
    assert forks_score is not None
    assert forks_score < clean_score
