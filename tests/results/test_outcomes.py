"""Every kind of pytest outcome lands in the ScoreResult as pytest itself reports it."""

from __future__ import annotations

import pytest

from tests.conftest import RunScored


def test_each_outcome_kind_is_recorded_with_the_phase_it_ended_in(
    pytester: pytest.Pytester, run_scored: RunScored
) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.fixture
        def broken_setup():
            raise RuntimeError("setup broke")

        @pytest.fixture
        def broken_teardown():
            yield
            raise RuntimeError("teardown broke")

        def test_pass(): pass
        def test_fail(): assert 1 == 2
        def test_setup_error(broken_setup): pass
        def test_teardown_error(broken_teardown): pass
        @pytest.mark.skip(reason="not today")
        def test_skip_marker(): pass
        def test_skip_inside(): pytest.skip("inside")
        @pytest.mark.xfail(reason="known")
        def test_xfail(): assert 0
        @pytest.mark.xfail(reason="known", strict=False)
        def test_xpass(): pass
        @pytest.mark.xfail(reason="known", strict=True)
        def test_strict_xpass(): pass
        def test_imperative_xfail(): pytest.xfail("later")
        """
    )
    scored = run_scored()
    got = {
        nodeid.split("::")[1]: (t["outcome"], t["phase"])
        for nodeid, t in ((t["nodeid"], t) for t in scored.data["tests"])
    }
    assert got == {
        "test_pass": ("passed", "call"),
        "test_fail": ("failed", "call"),
        "test_setup_error": ("error", "setup"),
        "test_teardown_error": ("error", "teardown"),
        "test_skip_marker": ("skipped", "setup"),
        "test_skip_inside": ("skipped", "call"),
        "test_xfail": ("xfailed", "call"),
        "test_xpass": ("xpassed", "call"),
        "test_strict_xpass": ("failed", "call"),
        "test_imperative_xfail": ("xfailed", "call"),
    }
    assert scored.signal("tests_total") == 10
    assert scored.signal("tests_passed") == 1
    assert scored.signal("pass_rate") == pytest.approx(0.1)
    assert "1 == 2" in scored.test("test_fail")["message"]
    assert scored.test("test_setup_error")["message"] == "RuntimeError: setup broke"
    assert scored.test("test_skip_marker")["message"] == "Skipped: not today"
    assert scored.data["ok"] is True


def test_failing_subtest_fails_its_test_and_counts_are_kept(
    pytester: pytest.Pytester, run_scored: RunScored
) -> None:
    pytester.makepyfile(
        """
        import unittest
        import pytest

        def test_all_good(subtests):
            for i in range(4):
                with subtests.test(i=i):
                    assert i >= 0

        def test_one_bad(subtests):
            for i in range(4):
                with subtests.test(i=i):
                    assert i != 2, "two is bad"

        def test_skipped_subtest_does_not_fail(subtests):
            with subtests.test():
                pytest.skip("nope")

        class TestUnit(unittest.TestCase):
            def test_unittest_subtests(self):
                for i in range(3):
                    with self.subTest(i=i):
                        self.assertLess(i, 2)
        """
    )
    scored = run_scored()
    good = scored.test("test_all_good")
    assert (good["outcome"], good["subtests"]) == ("passed", {"passed": 4})
    bad = scored.test("test_one_bad")
    assert bad["outcome"] == "failed"
    assert bad["subtests"] == {"passed": 3, "failed": 1}
    assert "two is bad" in bad["message"]
    assert scored.test("test_skipped_subtest_does_not_fail")["outcome"] == "passed"
    unit = scored.test("test_unittest_subtests")
    assert unit["outcome"] == "failed"
    assert unit["subtests"]["failed"] == 1


@pytest.mark.slow  # starts a process, or takes seconds of CPU
def test_pytest_timeout_expiry_is_a_timeout_not_a_failure(
    pytester: pytest.Pytester, run_scored: RunScored
) -> None:
    pytester.makepyfile(
        """
        import time
        import pytest

        @pytest.mark.timeout(0.5)
        def test_slow():
            time.sleep(30)

        def test_fine():
            pass
        """
    )
    scored = run_scored("-p", "timeout", subprocess=True)
    assert scored.test("test_slow")["outcome"] == "timeout"
    assert scored.test("test_fine")["outcome"] == "passed"


def test_tests_left_unrun_by_exitfirst_are_not_run(
    pytester: pytest.Pytester, run_scored: RunScored
) -> None:
    pytester.makepyfile(
        """
        def test_a(): assert 0
        def test_b(): pass
        def test_c(): pass
        """
    )
    scored = run_scored("-x")
    assert list(scored.outcomes().values()) == ["failed", "not_run", "not_run"]
    assert scored.test("test_b")["duration_s"] is None
    assert scored.signal("pass_rate") == 0.0


@pytest.mark.parametrize(
    ("body", "expected_error"),
    [
        ("pytest.exit('bye', returncode=0)", "session interrupted (Exit: bye)"),
        ("raise KeyboardInterrupt", "session interrupted (KeyboardInterrupt)"),
    ],
)
@pytest.mark.slow  # starts a process, or takes seconds of CPU
def test_an_interrupted_session_is_not_ok_and_unrun_tests_do_not_pass(
    pytester: pytest.Pytester, run_scored: RunScored, body: str, expected_error: str
) -> None:
    pytester.makepyfile(
        f"""
        import pytest
        def test_a(): pass
        def test_b(): {body}
        def test_c(): pass
        """
    )
    # In a subprocess: an in-process KeyboardInterrupt would stop this very test run too.
    scored = run_scored(subprocess=True)
    assert scored.data["ok"] is False
    assert scored.data["error"] == expected_error
    assert scored.test("::test_c")["outcome"] == "not_run"
    assert scored.signal("tests_passed") == 1


def test_collection_error_makes_counts_unknown_rather_than_invented(
    pytester: pytest.Pytester, run_scored: RunScored
) -> None:
    pytester.makepyfile(
        test_good="def test_ok(): pass",
        test_broken="import no_such_module_here\ndef test_x(): pass",
    )
    scored = run_scored()
    assert scored.data["ok"] is False
    assert "collection error" in scored.data["error"]
    assert "no_such_module_here" in scored.data["error"]
    assert scored.data["collection_errors"][0]["nodeid"] == "test_broken.py"
    assert scored.signal("pass_rate") is None
    assert scored.signal("tests_total") is None
    assert scored.signal("duration_s") is not None


def test_no_tests_collected_is_an_honest_error(
    pytester: pytest.Pytester, run_scored: RunScored
) -> None:
    pytester.makepyfile("x = 1")
    scored = run_scored()
    assert scored.data["ok"] is False
    assert scored.data["error"] == "no tests collected"
    assert scored.signal("tests_total") == 0
    assert scored.signal("pass_rate") is None


def test_long_failure_messages_are_bounded(
    pytester: pytest.Pytester, run_scored: RunScored
) -> None:
    pytester.makepyfile("def test_long(): raise ValueError('x' * 100_000)")
    scored = run_scored()
    message = scored.test("test_long")["message"]
    assert len(message) <= 2048
    assert message.startswith("ValueError: xxx")


def test_deselected_tests_are_not_part_of_the_result(
    pytester: pytest.Pytester, run_scored: RunScored
) -> None:
    pytester.makepyfile("def test_keep(): pass\ndef test_drop(): pass")
    scored = run_scored("-k", "keep")
    assert [t["nodeid"].split("::")[1] for t in scored.data["tests"]] == ["test_keep"]


def test_a_module_skipped_at_collection_counts_as_one_skipped_like_pytest(
    pytester: pytest.Pytester, run_scored: RunScored
) -> None:
    pytester.makepyfile(
        test_skipped_module="import pytest\npytest.skip('no backend', allow_module_level=True)\n",
        test_fine="def test_a(): pass",
    )
    scored = run_scored()
    scored.run.assert_outcomes(passed=1, skipped=1)
    record = scored.test("test_skipped_module.py")
    assert (record["outcome"], record["phase"]) == ("skipped", "collect")
    assert record["message"] == "Skipped: no backend"
    assert scored.signal("tests_total") == 2
