"""The per-test limit (Limits.test_timeout_s, pytest-timeout's signal method): a hang costs
one test and the run goes on; the candidate's budget still bounds the whole."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_scorewright.child.test_process.test_clock import STRETCH
from pytest_scorewright.errors import ConfigError
from pytest_scorewright.evaluator import Evaluator
from pytest_scorewright.kernel.procfs import threads_waited_s, waited_s
from pytest_scorewright.limits import Limits, rounded_up
from pytest_scorewright.result import ScoreResult
from tests.forked import in_a_fork

SUITE = """
    from solution import work

    def test_before():
        assert work(1) == 2

    def test_hangs_in_candidate_code():
        assert work(-1) == 0

    def test_after():
        assert work(2) == 4

    class TestLater:
        def test_method(self):
            assert work(3) == 6
"""

REFERENCE = "def work(x):\n    return 2 * x if x >= 0 else 0\n"
# Loops in Python code (SIGALRM's handler runs between bytecodes), and in a sleep (a system
# call that SIGALRM interrupts).
SPINNING = "def work(x):\n    while x < 0:\n        pass\n    return 2 * x\n"
SLEEPING = (
    "import time\n\ndef work(x):\n    while x < 0:\n        time.sleep(60)\n    return 2 * x\n"
)


def _task(tmp_path: Path) -> tuple[Path, Path]:
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_work.py").write_text(textwrap.dedent(SUITE), encoding="utf-8")
    reference = tmp_path / "reference.py"
    reference.write_text(REFERENCE, encoding="utf-8")
    return tests, reference


def _outcomes(result: ScoreResult) -> dict[str, str]:
    return {t.nodeid.split("::")[-1]: t.outcome for t in result.tests}


def _config(result: ScoreResult) -> str:
    assert result.limits is not None
    return str(result.limits["sandbox"]["pytest_config"])


@pytest.mark.sandbox
@pytest.mark.parametrize("source", [SPINNING, SLEEPING], ids=["spinning", "sleeping"])
@pytest.mark.parametrize(
    "how",
    [
        {},  # the session started in the warm parent: the limit must reach the run
        {"env": {"PYTEST_ADDOPTS": ""}},  # pytest.main in each run
        {"warm": False},  # forked from this process
        {"isolation": "in-process"},  # the candidate's frames in the test's traceback
    ],
    ids=["started-in-warm-parent", "main-in-run", "no-warm-parent", "in-process"],
)
def test_a_hanging_test_costs_one_test_and_the_run_goes_on(
    tmp_path: Path, source: str, how: dict[str, object]
) -> None:
    tests, reference = _task(tmp_path)
    candidate = tmp_path / "candidate.py"
    candidate.write_text(source, encoding="utf-8")
    limits = Limits(timeout_s=20, test_timeout_s=1)
    with Evaluator(tests, reference=reference, limits=limits, **how) as ev:  # type: ignore[arg-type]
        result = ev.score(candidate)
    assert result.ok, result.error
    assert _outcomes(result) == {
        "test_before": "passed",
        "test_hangs_in_candidate_code": "timeout",
        "test_after": "passed",
        "test_method": "passed",
    }
    hung = next(t for t in result.tests if t.outcome == "timeout")
    assert "Timeout (>1.0s) from pytest-timeout" in (hung.message or "")
    # Where the candidate was stuck: its own frame (apart, its process's stack; in process,
    # the traceback), never ours or the standard library's.
    assert re.search(r"\(the candidate was at solution\.py:[2-5] in work\)$", hung.message or "")
    assert hung.duration_s is not None
    # Its limit, stretched by the time it waited for a CPU, at most STRETCH times (beside
    # six CPU-bound jobs in sessions of their own a spinning hang got 1.9 s of CPU in 10 s).
    assert 0.9 < hung.duration_s < STRETCH * 1.0 + 1.0
    assert result.signal("pass_rate") == pytest.approx(3 / 4)
    assert result.limits is not None
    assert result.limits["test_timeout_s"] == 1.0
    if how == {}:
        assert _config(result) == "parsed and session started once, in the warm parent"


@pytest.mark.sandbox
def test_the_budget_still_bounds_a_candidate_that_outlives_the_per_test_limit(
    tmp_path: Path,
) -> None:
    tests, reference = _task(tmp_path)
    candidate = tmp_path / "candidate.py"
    # pytest-timeout's alarm ignored in the test process (so in process: apart, the test
    # process's own alarm ends the wait): only the run's deadline can end this.
    candidate.write_text(
        "import signal\n\ndef work(x):\n    signal.signal(signal.SIGALRM, signal.SIG_IGN)\n"
        "    while True:\n        pass\n",
        encoding="utf-8",
    )
    with Evaluator(
        tests,
        reference=reference,
        limits=Limits(timeout_s=3.5, test_timeout_s=1),
        isolation="in-process",
    ) as ev:
        result = ev.score(candidate)
    assert not result.ok
    assert result.error is not None
    assert "timed out after" in result.error
    outcomes = list(_outcomes(result).values())
    assert outcomes[0] == "timeout"  # cut by the run's deadline
    assert "passed" not in outcomes


@pytest.mark.sandbox
@pytest.mark.parametrize("source", [SPINNING, SLEEPING], ids=["spinning", "sleeping"])
def test_a_candidate_that_hangs_more_than_it_works_is_scored_on_every_test_quickly(
    tmp_path: Path, source: str
) -> None:
    # Each test's limits follow the reference (ten times its time for that test, at least a
    # second of wall time and half a second of CPU); after two timeouts outnumbering the
    # passes, the later tests get the short limits: every test is scored, whatever the order.
    tests, reference = _task(tmp_path)
    (tests / "test_work.py").write_text(
        textwrap.dedent(SUITE).replace("work(1) == 2", "work(-1) == 0"), encoding="utf-8"
    )
    candidate = tmp_path / "candidate.py"
    candidate.write_text(source, encoding="utf-8")
    with Evaluator(tests, reference=reference) as ev:
        assert ev.limits.test_seconds == 1.0
        result = ev.score(candidate)
    assert result.error is None, result.error  # a hang is the tests' failure, not the run's
    assert _outcomes(result) == {
        "test_before": "timeout",
        "test_hangs_in_candidate_code": "timeout",
        "test_after": "passed",
        "test_method": "passed",
    }
    assert result.limits is not None
    assert result.limits["test_timeout_s"] == 1.0
    assert result.limits["per_test"] == {"wall_s": 1.0, "cpu_s": 0.5, "own": {}}
    first = next(t for t in result.tests if t.nodeid.endswith("test_before"))
    # A spin meets its CPU limit first on a quiet machine, its wall limit on a busy one.
    limits = ("(>0.5s of CPU)", "(>1.0s)") if source == SPINNING else ("(>1.0s)",)
    assert any(limit in (first.message or "") for limit in limits), first.message


@pytest.mark.sandbox
def test_a_spin_is_cut_by_its_cpu_limit_however_long_its_wall_limit(tmp_path: Path) -> None:
    # The reference's test waits (0.3 s of wall time, almost no CPU): its wall limit is 5 s,
    # its CPU limit the floor, 0.5 s. A candidate that spins there is cut by the CPU limit,
    # on a busy machine too, long before its wall limit.
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_wait.py").write_text(
        "from solution import work\n\ndef test_waits():\n    assert work() == 1\n",
        encoding="utf-8",
    )
    reference = tmp_path / "reference.py"
    reference.write_text("import time\n\ndef work():\n    time.sleep(0.3)\n    return 1\n")
    candidate = tmp_path / "spins.py"
    candidate.write_text("def work():\n    while True:\n        pass\n", encoding="utf-8")
    with Evaluator(tests, reference=reference) as ev:
        per_test = ev.limits.per_test
        result = ev.score(candidate)
    assert per_test is not None
    assert per_test.own == (("visible", "tests/test_wait.py::test_waits", 5.0, 0.5),)
    (record,) = result.tests
    assert record.outcome == "timeout"
    assert "(>0.5s of CPU) from scorewright's per-test limit" in (record.message or "")
    assert record.cpu_s is not None
    assert record.cpu_s >= 0.5


@pytest.mark.sandbox
def test_without_a_per_test_limit_one_hang_takes_the_budget(tmp_path: Path) -> None:
    tests, reference = _task(tmp_path)
    candidate = tmp_path / "candidate.py"
    # Sleeping: the budget cuts a sleep as it cuts a spin, without 3 s of CPU.
    candidate.write_text(SLEEPING, encoding="utf-8")
    with Evaluator(tests, reference=reference, limits=Limits(timeout_s=3, test_timeout_s=0)) as ev:
        result = ev.score(candidate)
    assert not result.ok
    assert result.error is not None
    assert "timed out after" in result.error
    assert _outcomes(result) == {
        "test_before": "passed",
        "test_hangs_in_candidate_code": "timeout",
        "test_after": "not_run",
        "test_method": "not_run",
    }


@pytest.mark.sandbox
def test_a_reference_slower_than_the_per_test_limit_is_refused_with_the_fix(
    tmp_path: Path,
) -> None:
    tests, _ = _task(tmp_path)
    slow = tmp_path / "slow.py"
    slow.write_text(
        "import time\n\ndef work(x):\n    time.sleep(2 if x < 0 else 0)\n"
        "    return 2 * x if x >= 0 else 0\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError, match="a slow test needs a longer --test-timeout"):
        Evaluator(tests, reference=slow, limits=Limits(timeout_s=20, test_timeout_s=1)).prepare()


def test_the_default_per_test_limit_is_a_quarter_of_the_budget_at_most_ten_seconds() -> None:
    assert Limits().test_seconds == 10.0
    assert Limits(timeout_s=8).test_seconds == 2.0
    assert Limits(test_timeout_s=0).test_seconds == 0.0
    assert Limits(test_timeout_s=30).to_dict()["test_timeout_s"] == 30.0


@pytest.mark.parametrize("bad", [-1, float("nan"), float("inf"), "5", True])
def test_a_bad_per_test_limit_is_a_one_line_error(bad: object) -> None:
    with pytest.raises(ConfigError, match=r"Limits.test_timeout_s must be a number of seconds"):
        Limits(test_timeout_s=bad)  # type: ignore[arg-type]


@pytest.mark.sandbox
def test_a_reference_slower_than_the_budget_is_refused_with_the_fix(tmp_path: Path) -> None:
    tests, _ = _task(tmp_path)
    slow = tmp_path / "slow.py"
    slow.write_text("import time\n\ndef work(x):\n    time.sleep(5)\n    return 2 * x\n")
    with pytest.raises(ConfigError, match=r"timed out after .*longer budget \(--timeout\)"):
        Evaluator(tests, reference=slow, limits=Limits(timeout_s=2, test_timeout_s=0)).prepare()


@pytest.mark.sandbox
def test_duration_is_the_calls_wall_time_not_the_sum_of_its_runs(tmp_path: Path) -> None:
    tests, reference = _task(tmp_path)
    heldout = tmp_path / "heldout"
    heldout.mkdir()
    (heldout / "test_hidden.py").write_text(
        "from solution import work\n\ndef test_hidden_hang():\n    assert work(-5) == 0\n"
    )
    candidate = tmp_path / "sleeping.py"
    # Sleeping, not spinning: the claim is about the clock, and two spins took 3 s of CPU.
    candidate.write_text(SLEEPING, encoding="utf-8")
    limits = Limits(timeout_s=20, test_timeout_s=1.5)
    with Evaluator(tests, heldout=heldout, reference=reference, limits=limits) as ev:
        ev.prepare()
        started = time.monotonic()
        result = ev.score(candidate)
        waited = time.monotonic() - started
    # Both runs hang at once (1.5 s each): the call and duration_s are about 1.5 s, not 3.
    duration = result.signal("duration_s")
    assert duration is not None
    assert duration <= waited
    assert duration > 0.9 * waited


def _eight_cases(tmp_path: Path) -> tuple[Path, Path]:
    """A parametrized test of eight cases, and its reference."""
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_many.py").write_text(
        "import pytest\nfrom solution import work\n\n\n"
        "@pytest.mark.parametrize('x', range(8))\n"
        "def test_work(x):\n    assert work(x) == 2 * x\n",
        encoding="utf-8",
    )
    reference = tmp_path / "reference.py"
    reference.write_text("def work(x):\n    return 2 * x\n", encoding="utf-8")
    return tests, reference


@pytest.mark.sandbox
def test_a_candidate_that_hangs_on_a_few_inputs_is_scored_test_for_test_as_plain_pytest(
    tmp_path: Path,
) -> None:
    tests, reference = _eight_cases(tmp_path)
    candidate = tmp_path / "hangs_twice.py"
    candidate.write_text(
        "def work(x):\n    while x in (1, 5):\n        pass\n    return 2 * x\n", encoding="utf-8"
    )
    limits = Limits(timeout_s=30, test_timeout_s=1.0)
    with Evaluator(tests, reference=reference, limits=limits) as ev:
        result = ev.score(candidate)
    # Two timeouts, but more tests passed by then: the run goes on, as plain pytest's would.
    outcomes = [t.outcome for t in sorted(result.tests, key=lambda t: t.nodeid)]
    assert outcomes.count("timeout") == 2, outcomes
    assert outcomes.count("passed") == 6, outcomes
    assert result.signal("pass_rate") == 0.75


@pytest.mark.sandbox
def test_a_candidate_whose_first_tests_hang_gets_every_later_test_scored(tmp_path: Path) -> None:
    # The order of the tests does not decide the verdict: the two that hang come first, and
    # every later one is still run (under the short limits) and passes.
    tests, reference = _eight_cases(tmp_path)
    candidate = tmp_path / "hangs_first.py"
    candidate.write_text(
        "def work(x):\n    while x in (0, 1):\n        pass\n    return 2 * x\n", encoding="utf-8"
    )
    with Evaluator(tests, reference=reference) as ev:
        result = ev.score(candidate)
    outcomes = [t.outcome for t in result.tests]
    # (Once, beside the suite at -n 4 and two CPU-bound jobs, every test after the two
    # hangs read not_run; never reproduced at load 8 alone: the messages say why next time.)
    why = [t.message for t in result.tests], result.error, result.integrity.reasons
    assert outcomes == ["timeout"] * 2 + ["passed"] * 6, (outcomes, why)
    assert result.signal("pass_rate") == 0.75


@pytest.mark.sandbox
def test_a_slow_reference_test_gets_its_own_limit_and_is_never_refused(tmp_path: Path) -> None:
    # Budget 8 s: without a reference, each test would get 2 s; the reference's slow test
    # (about 2.5 s) runs under the budget and then has a limit of its own.
    tests, _ = _task(tmp_path)
    slow = tmp_path / "slow.py"
    slow.write_text(
        "import time\n\ndef work(x):\n    time.sleep(2.5 if x < 0 else 0)\n"
        "    return 2 * x if x >= 0 else 0\n",
        encoding="utf-8",
    )
    with Evaluator(tests, reference=slow, limits=Limits(timeout_s=8)) as ev:
        result = ev.score(slow)
        per_test = ev.limits.per_test
    assert per_test is not None
    assert per_test.own == (
        ("visible", "tests/test_work.py::test_hangs_in_candidate_code", 8.0, 0.5),
    ), per_test.own
    assert result.signal("pass_rate") == 1.0


def test_limits_are_rounded_up_to_coarse_steps() -> None:
    assert [rounded_up(s) for s in (0.3, 0.5, 0.51, 1.0, 1.2, 2.2, 4.4, 7.19, 10.0, 11.8)] == [
        0.3, 0.5, 1.0, 1.0, 2.0, 3.0, 5.0, 10.0, 10.0, 20.0,
    ]  # fmt: skip
    # Each test's own limits from the reference's times; the quick ones keep the floors.
    limits = Limits().calibrated(
        {("visible", "a"): (0.001, None), ("visible", "b"): (0.7, 0.6), ("held", "c"): (11.8, 11)}
    )
    assert limits.test_seconds == 1.0
    assert limits.per_test is not None
    assert limits.per_test.own == (("held", "c", 45.0, 100.0), ("visible", "b", 10.0, 3.0))
    assert limits.per_test.for_suite("visible") == {"b": (10.0, 3.0)}
    # A caller's own per-test limit stays as it is.
    assert Limits(test_timeout_s=3).calibrated({("visible", "b"): (0.7, 0.6)}).per_test is None


def test_the_short_limits_leave_a_slower_test_twice_its_reference_time() -> None:
    from pytest_scorewright.child.test_process.test_clock import TestClock

    # test_round_trip took 0.44 s with the reference: 5 s of wall time, 3 s of CPU.
    clock = TestClock({"t::slow": (5.0, 3.0)}, (1.0, 0.5), lambda: None)
    assert clock.limits_of("t::slow") == (5.0, 3.0)
    # Once it has hung twice, the slower test is cut at twice its reference time ...
    clock.hanging = True
    assert clock.limits_of("t::quick") == (1.0, 0.5)
    assert clock.limits_of("t::slow") == pytest.approx((1.0, 1.2))
    # ... and while it hangs more than it works, the quick ones at the short limits.
    clock.short = True
    assert clock.limits_of("t::quick") == (0.2, 0.1)
    assert clock.limits_of("t::slow") == pytest.approx((1.0, 1.2))  # twice its 0.44 s, at least
    # One timeout (the first test's) shortens the quick tests, never a slower one's limits:
    # a right program's first test stretched by a loaded machine must not cut the next.
    clock.hanging = False
    assert clock.limits_of("t::quick") == (0.2, 0.1)
    assert clock.limits_of("t::slow") == (5.0, 3.0)


@pytest.mark.sandbox
@pytest.mark.parametrize("hang", [SPINNING, SLEEPING], ids=["spins", "sleeps"])
def test_a_test_that_goes_on_after_its_timeout_is_cut_again(hang: str, tmp_path: Path) -> None:
    # pytest-timeout fires once; each subtest catches the failure and calls the hung
    # candidate again. The quickstart's test_many_round_trips so held a hung candidate's run
    # for its whole 45 s budget.
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_subtests.py").write_text(
        textwrap.dedent(
            """
            from solution import work

            def test_many(subtests):
                for n in range(6):
                    with subtests.test(n=n):
                        assert work(-1 - n) == 0

            def test_after():
                assert work(2) == 4
            """
        ),
        encoding="utf-8",
    )
    reference = tmp_path / "reference.py"
    reference.write_text(REFERENCE, encoding="utf-8")
    candidate = tmp_path / "solution.py"
    candidate.write_text(hang, encoding="utf-8")
    with Evaluator(tests, reference=reference, limits=Limits(timeout_s=30)) as ev:
        ev.prepare()
        started = time.monotonic()
        result = ev.score(candidate)
        elapsed = time.monotonic() - started
    assert result.error is None, result.error
    many = next(t for t in result.tests if t.nodeid.endswith("test_many"))
    assert many.outcome in ("failed", "timeout")
    assert many.message is not None
    # Each hang is cut inside its subtest, which reports it and lets the next one run. Under
    # load a signal can land between two subtests (in pytest's own bookkeeping of the last
    # one): that ends the test there, as a timeout, which is as right a verdict for it.
    if "failed subtests" not in many.message:
        assert many.outcome == "timeout", many
        assert "Timeout" in many.message, many.message
    else:
        assert "6 failed subtests" in many.message
    assert _outcomes(result)["test_after"] == "passed"
    # Six hangs: the first at the floor (1 s of wall time, 0.5 s of CPU), each later one
    # 0.2 s after the one before; never the budget.
    assert elapsed < 10, elapsed


def test_a_refired_signal_is_let_pass_inside_our_reporting() -> None:
    import sys

    from pytest_scorewright.child.test_process import test_clock

    # A frame of the channel's writer (a report on its way to the parent): a failure raised
    # there would lose the report, so the signal waits for the watcher's next one.
    namespace: dict[str, object] = {"sys": sys}
    exec(  # noqa: S102
        compile(
            "def where():\n    return sys._getframe()\n", test_clock.REPORTING_FILES[1], "exec"
        ),
        namespace,
    )
    assert test_clock._in_reporting(namespace["where"]())  # type: ignore[operator]
    assert not test_clock._in_reporting(sys._getframe())


@pytest.mark.sandbox
def test_a_timeout_alarm_between_a_tests_phases_ends_no_run(tmp_path: Path) -> None:
    # pytest-timeout's alarm can come after a test's call, while pytest writes the report (seen
    # under load: the call failed at its CPU limit in the same second as the alarm). Raised
    # there it is pytest's internal error: the session ends and every later test reads
    # not_run. Here the suite's own conftest takes longer to log each call's report than the
    # per-test limit, so the alarm always comes then: every test must still be scored.
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "conftest.py").write_text(
        "import time\n\n\ndef pytest_runtest_logreport(report):\n"
        "    if report.when == 'call':\n        time.sleep(1.5)\n",
        encoding="utf-8",
    )
    (tests / "test_few.py").write_text(
        "import pytest\nfrom solution import work\n\n\n"
        "@pytest.mark.parametrize('x', range(3))\n"
        "def test_work(x):\n    assert work(x) == 2 * x\n",
        encoding="utf-8",
    )
    reference = tmp_path / "reference.py"
    reference.write_text("def work(x):\n    return 2 * x\n", encoding="utf-8")
    limits = Limits(timeout_s=40, test_timeout_s=1.0)
    with Evaluator(tests, reference=reference, limits=limits) as ev:
        result = ev.score(reference)
    assert [t.outcome for t in result.tests] == ["passed"] * 3, (result.error, result.tests)
    assert result.error is None


class _Item:
    """What pytest-timeout's alarm reads of a test item: its terminal writer."""

    class config:  # read as ``item.config``
        @staticmethod
        def get_terminal_writer() -> object:
            from _pytest._io import TerminalWriter

            return TerminalWriter(open(os.devnull, "w"))  # the child exits


_FRAME_BYTES = 200 * 1024


def _write_while_signalled(write: str) -> int:
    """In a forked child, with a test's timeouts due (the clock's, and pytest-timeout's alarm
    every few milliseconds): one large message through ``write`` to a pipe a slow reader
    empties. The exit status: 0 if the message went whole and the timeout came after it."""
    import pytest_timeout  # type: ignore[import-untyped]

    from pytest_scorewright.child.test_process import recheck, test_clock
    from pytest_scorewright.protocol.channel import send

    def child(written: int) -> int:
        clock = test_clock.TestClock({}, None, lambda: None)
        clock.install()
        clock.in_phase = True
        clock._nodeid = clock._fired = "t::x"
        clock._why = "Timeout (>0.5s of CPU time)"
        message = {"type": "x", "data": "a" * _FRAME_BYTES}
        try:
            if write == "alarm":
                item: Any = _Item()
                clock.set_wall_timer(item, pytest_timeout.Settings(0.01, "signal", False, True))
                send(written, message)
            else:
                recheck._channel.fd = written
                recheck._emit(message)
        except pytest.fail.Exception:
            return 3  # failed while the message was being written
        try:
            time.sleep(5)  # the next signal (re-armed, or the parent's) fails the test here
        except pytest.fail.Exception:
            return 0
        return 4

    def slowly(pid: int) -> None:
        if write != "alarm":
            os.kill(pid, signal.SIGPROF)  # as the clock's watcher sends it, while the test runs
        time.sleep(0.002)

    code, got = in_a_fork(child, each_read=slowly, size=4096)
    from pytest_scorewright.protocol.channel import decode_frame

    length = int.from_bytes(got[:4], "big")
    assert length == len(got) - 4, (length, len(got))  # one frame, whole
    assert decode_frame(got[4:])["data"] == "a" * _FRAME_BYTES
    return code


@pytest.mark.slow
@pytest.mark.parametrize("write", ["alarm", "recheck"])
def test_a_timeout_due_while_a_message_is_written_waits_for_its_end(write: str) -> None:
    # A loaded parent leaves the pipe full, so a large frame goes in parts; a test's timeout
    # raised between two parts would leave the parent half a message: a broken channel, read
    # as tampering, for what may be a right program that was merely slow.
    assert _write_while_signalled(write) == 0


def _write_task(tests: Path, candidate: Path, cpu_s: float) -> None:
    """A test whose candidate works for ``cpu_s`` of its own CPU, and one whose candidate
    sleeps. CPU, not a count of turns: a loop's CPU per turn grows with the load (caches and
    cores shared), and a count calibrated beside the jobs needed 0.16-0.38 s of CPU for
    "0.2 s" (once 0.38 s, under the 0.4 s limit: cut)."""
    tests.mkdir()
    (tests / "test_load.py").write_text(
        textwrap.dedent(
            f"""
            from solution import wait, work

            def test_work():
                assert work({cpu_s}) == 1

            def test_wait():
                assert wait() == 1
            """
        ),
        encoding="utf-8",
    )
    candidate.write_text(
        "import time\n\n"
        "def work(cpu_s):\n    started = time.process_time()\n"
        "    while time.process_time() - started < cpu_s:\n        pass\n    return 1\n\n"
        "def wait():\n    time.sleep(60)\n    return 1\n",
        encoding="utf-8",
    )


@pytest.mark.slow
@pytest.mark.sandbox
@pytest.mark.parametrize("isolation", ["process", "in-process"])
def test_a_right_program_starved_of_cpu_keeps_its_test_and_a_sleeping_hang_does_not(
    isolation: str, tmp_path: Path
) -> None:
    # Beside three CPU-bound jobs on every CPU, a right program's 0.2 s of CPU takes about
    # four times that of wall time, past its 0.4 s limit; it waited for a CPU meanwhile, so
    # the limit is stretched by as much. A hang that sleeps waits for no CPU: cut as before.
    tests = tmp_path / "tests"
    candidate = tmp_path / "solution.py"
    cpus = sorted(os.sched_getaffinity(0))
    hogs = [
        # Each in a session of its own, as separate jobs are: the kernel's autogroups share
        # a CPU between sessions first (the sandbox starts one for every run).
        subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
        for _ in range(3 * len(cpus))
    ]
    try:
        for index, hog in enumerate(hogs):
            os.sched_setaffinity(hog.pid, {cpus[index % len(cpus)]})
        _write_task(tests, candidate, 0.2)
        limits = Limits(timeout_s=30, test_timeout_s=0.4)
        with Evaluator(tests, limits=limits, isolation=isolation) as ev:
            result = ev.score(candidate)
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    assert result.error is None, result.error
    records = {t.nodeid.rsplit("::", 1)[1]: t for t in result.tests}
    work, wait = records["test_work"], records["test_wait"]
    assert work.outcome == "passed", work
    assert work.duration_s is not None
    assert work.duration_s > 0.6, work  # longer than its limit: it was stretched
    assert wait.outcome == "timeout", wait
    assert wait.duration_s is not None
    assert wait.duration_s < 2.0, wait


def test_a_wait_for_a_cpu_counts_in_every_thread_of_the_test_process() -> None:
    # In process, the clock's watcher thread holds the GIL while it waits for a CPU: the
    # test's thread then waits too, and its own count shows a sleep (a right program cut at
    # 1.47 s of wall for 0.32 s of CPU beside CI's load). So every thread's wait counts.
    stop = threading.Event()
    spinner = threading.Thread(target=lambda: stop.wait(0.05), daemon=True)
    spinner.start()
    try:
        main = waited_s(os.getpid())  # read first: the counts only grow
        every = threads_waited_s(os.getpid())
        assert main is not None
        assert every is not None
        assert every >= main
    finally:
        stop.set()
        spinner.join()
    assert threads_waited_s(0) is None  # no such process
