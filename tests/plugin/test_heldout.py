"""Held-out tests: marked on a test, class or module, or by a conftest hook; scored apart."""

from __future__ import annotations

import pytest

from tests.conftest import RunScored


def test_heldout_marker_on_function_class_and_module_is_honoured(
    pytester: pytest.Pytester, run_scored: RunScored
) -> None:
    pytester.makepyfile(
        test_visible="""
            import pytest
            def test_v1(): pass
            def test_v2(): pass
            @pytest.mark.heldout
            def test_h_function(): assert 0
            @pytest.mark.heldout
            class TestHeld:
                def test_h_method(self): pass
            """,
        test_module_heldout="""
            import pytest
            pytestmark = pytest.mark.heldout
            def test_h_module(): assert 0
            """,
    )
    scored = run_scored("--strict-markers")
    heldout = {t["nodeid"].split("::")[-1]: t["heldout"] for t in scored.data["tests"]}
    assert heldout == {
        "test_v1": False,
        "test_v2": False,
        "test_h_function": True,
        "test_h_method": True,
        "test_h_module": True,
    }
    assert scored.signal("visible_pass_rate") == 1.0
    assert scored.signal("heldout_pass_rate") == pytest.approx(1 / 3)
    assert scored.signal("heldout_divergence") == pytest.approx(1 - 1 / 3)
    assert scored.signal("pass_rate") == pytest.approx(3 / 5)


def test_heldout_marker_added_by_a_conftest_hook_counts(
    pytester: pytest.Pytester, run_scored: RunScored
) -> None:
    pytester.makeconftest(
        """
        import pytest
        def pytest_collection_modifyitems(items):
            for item in items:
                if "secret" in item.name:
                    item.add_marker(pytest.mark.heldout)
        """
    )
    pytester.makepyfile("def test_plain(): pass\ndef test_secret_one(): pass")
    scored = run_scored()
    assert scored.test("test_secret_one")["heldout"] is True
    assert scored.test("test_plain")["heldout"] is False


def test_without_heldout_tests_no_heldout_signal_is_invented(
    pytester: pytest.Pytester, run_scored: RunScored
) -> None:
    pytester.makepyfile("def test_a(): pass")
    scored = run_scored()
    names = {s["name"] for s in scored.data["signals"]}
    assert "heldout_pass_rate" not in names
    assert "heldout_divergence" not in names
    assert scored.signal("visible_pass_rate") == 1.0
    assert scored.data["integrity"] == {
        "flagged": False,
        "rejected": False,
        "policy": "default",
        "reasons": [],
    }


def test_heldout_tests_collected_but_none_executed_is_a_recorded_hint(
    pytester: pytest.Pytester, run_scored: RunScored
) -> None:
    pytester.makeconftest(
        """
        import pytest
        def pytest_runtest_setup(item):
            if item.get_closest_marker("heldout"):
                pytest.skip("conveniently skipped")
        """
    )
    pytester.makepyfile(
        """
        import pytest
        def test_v(): pass
        @pytest.mark.heldout
        def test_h(): pass
        """
    )
    scored = run_scored()
    # Weak evidence (a suite may skip its held-out tests honestly): recorded, not acted on.
    integrity = scored.data["integrity"]
    assert (integrity["flagged"], integrity["rejected"]) == (False, False)
    assert [(r["code"], r["severity"]) for r in integrity["reasons"]] == [
        ("heldout_not_executed", "hint")
    ]
    assert scored.signal("heldout_pass_rate") == 0.0


def test_a_custom_hook_can_decide_what_is_held_out(
    pytester: pytest.Pytester, run_scored: RunScored
) -> None:
    pytester.makeconftest(
        """
        def pytest_scorewright_heldout(item):
            return "heldout_dir" in str(item.path)
        """
    )
    pytester.mkpydir("heldout_dir")
    pytester.makepyfile(**{"heldout_dir/test_h": "def test_h(): pass"})
    pytester.makepyfile(test_v="def test_v(): pass")
    scored = run_scored()
    assert scored.test("test_h")["heldout"] is True
    assert scored.test("test_v")["heldout"] is False


def test_result_hook_sees_the_result_before_it_is_written(
    pytester: pytest.Pytester, run_scored: RunScored
) -> None:
    pytester.makeconftest(
        """
        def pytest_scorewright_result(result, config):
            config._seen = result.signal("pass_rate")
            print("SEEN", result.signal("pass_rate"))
        """
    )
    pytester.makepyfile("def test_a(): pass")
    scored = run_scored("-s")
    scored.run.stdout.fnmatch_lines(["*SEEN 1.0*"])


def test_held_out_ids_are_as_the_user_laid_them_out() -> None:
    # Every run sees its suite at tests/; the result names a held-out test by its own
    # directory, as plugin mode and plain pytest do, in its record and its own limits.
    from pytest_scorewright.result import Reason, TestRecord
    from pytest_scorewright.results.heldout_ids import with_heldout_ids
    from pytest_scorewright.results.measure import build_result

    records = [
        TestRecord("tests/test_a.py::test_v", "passed", "call", False, 0.1),
        TestRecord("tests/test_h.py::test_h[1]", "failed", "call", True, 0.1, "x"),
        TestRecord("tests/test_h.py::test_h[10]", "passed", "call", True, 0.1),
    ]
    result = build_result(
        records,
        mode="evaluator",
        duration_s=1.0,
        reasons=[Reason("memorised_inputs", "tests/test_h.py::test_h[1] and tests/test_a.py")],
        limits={"per_test": {"own": {"held-out": {"tests/test_h.py::test_h[10]": [5, 5]}}}},
    )
    moved = with_heldout_ids(result, "heldout")
    assert [t.nodeid for t in moved.tests] == [
        "tests/test_a.py::test_v",
        "heldout/test_h.py::test_h[1]",
        "heldout/test_h.py::test_h[10]",
    ]
    assert moved.integrity.reasons[0].detail == "heldout/test_h.py::test_h[1] and tests/test_a.py"
    assert moved.limits is not None
    assert moved.limits["per_test"]["own"]["held-out"] == {"heldout/test_h.py::test_h[10]": [5, 5]}
    assert with_heldout_ids(result, "tests") is result
