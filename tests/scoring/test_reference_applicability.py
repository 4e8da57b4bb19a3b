"""The reference defines what applies: tests it skips or xfails are not applicable; tests it
fails refuse the suite, unless it is the baseline (scoring/applicable.py)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pytest_scorewright.errors import ConfigError
from pytest_scorewright.evaluator import Evaluator
from pytest_scorewright.fitness import Fitness
from pytest_scorewright.openevolve import artifacts
from pytest_scorewright.result import ScoreResult, TestRecord
from pytest_scorewright.results.measure import build_result
from pytest_scorewright.results.summary import summary_lines
from pytest_scorewright.scoring.applicable import ReferenceOutcomes
from tests.conftest import validate

SUITE = """
    import sys
    import pytest
    from solution import add, flaky_feature

    def test_add():
        assert add(2, 3) == 5

    def test_add_negative():
        assert add(-2, -3) == -5

    @pytest.mark.skipif(sys.version_info >= (3, 0), reason="only on Python 2")
    def test_python2_only():
        assert add("a", "b") == "ab"

    @pytest.mark.xfail(reason="known bug in every version")
    def test_known_bug():
        assert add(0.1, 0.2) == 0.3

    def test_needs_feature():
        if not flaky_feature():
            pytest.skip("feature not built here")
        assert add(1, 1) == 2
"""

FEATURE = "\n\ndef flaky_feature():\n    return False\n"
REFERENCE = "def add(a, b):\n    return a + b\n" + FEATURE


def _task(tmp_path: Path, suite: str = SUITE) -> Path:
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_add.py").write_text(textwrap.dedent(suite), encoding="utf-8")
    (tmp_path / "reference.py").write_text(REFERENCE, encoding="utf-8")
    return tests


def _write(tmp_path: Path, name: str, source: str) -> Path:
    path = tmp_path / name
    path.write_text(source, encoding="utf-8")
    return path


def _records(result: ScoreResult) -> dict[str, TestRecord]:
    return {t.nodeid.split("::")[-1]: t for t in result.tests}


@pytest.mark.sandbox
def test_tests_the_reference_skips_or_xfails_are_not_applicable_and_out_of_every_rate(
    tmp_path: Path,
) -> None:
    tests = _task(tmp_path)
    wrong = _write(tmp_path, "wrong.py", "def add(a, b):\n    return a - b\n" + FEATURE)
    with Evaluator(tests, reference=tmp_path / "reference.py") as ev:
        good = ev.score(tmp_path / "reference.py")
        bad = ev.score(wrong)
    validate(json.loads(good.to_json()))
    assert good.ok, good.error
    records = _records(good)
    assert records["test_python2_only"].outcome == "not_applicable"
    assert records["test_python2_only"].reference_outcome == "skipped"
    assert records["test_known_bug"].outcome == "not_applicable"
    assert records["test_known_bug"].reference_outcome == "xfailed"
    assert records["test_needs_feature"].reference_outcome == "skipped"
    assert "feature not built here" in (records["test_needs_feature"].message or "")
    assert good.signal("tests_not_applicable") == 3
    assert good.signal("tests_total") == 2
    assert good.signal("pass_rate") == 1.0
    assert good.integrity.flagged is False
    assert bad.signal("tests_not_applicable") == 3
    assert bad.signal("pass_rate") == 0.0
    # Read back as written: the outcome and the reference's outcome survive the round trip.
    again = ScoreResult.from_json(bad.to_json())
    assert _records(again)["test_known_bug"].reference_outcome == "xfailed"


@pytest.mark.sandbox
def test_a_reference_that_fails_a_test_is_refused_with_the_way_out(tmp_path: Path) -> None:
    tests = _task(tmp_path)
    (tests / "test_more.py").write_text(
        "from solution import add\n\ndef test_strings():\n    assert add('a', 1) == 'a1'\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as caught:
        Evaluator(tests, reference=tmp_path / "reference.py").prepare()
    message = str(caught.value)
    assert "1 test(s) fail, first tests/test_more.py::test_strings: failed" in message
    assert "--reference-baseline" in message


@pytest.mark.sandbox
def test_as_a_baseline_the_tests_the_reference_fails_are_not_applicable_and_counted(
    tmp_path: Path,
) -> None:
    tests = _task(tmp_path)
    (tests / "test_more.py").write_text(
        "from solution import add\n\n"
        "def test_strings():\n    assert add('a', 1) == 'a1'\n\n"
        "def test_lists():\n    assert add([1], [2]) == [1, 2]\n",
        encoding="utf-8",
    )
    # A candidate that fixes what the reference gets wrong gains nothing from it, and one
    # that breaks what the reference gets right loses.
    better = _write(
        tmp_path,
        "better.py",
        "def add(a, b):\n    if isinstance(a, str):\n        return a + str(b)\n"
        "    return a + b\n" + FEATURE,
    )
    worse = _write(tmp_path, "worse.py", "def add(a, b):\n    return 5\n" + FEATURE)
    with Evaluator(tests, reference=tmp_path / "reference.py", reference_baseline=True) as ev:
        good, fixed, broken = ev.score(tmp_path / "reference.py"), ev.score(better), ev.score(worse)
    assert good.signal("reference_failures") == 1
    assert good.signal("tests_not_applicable") == 4  # three skips and xfails, one failure
    assert good.signal("pass_rate") == 1.0
    strings = _records(good)["test_strings"]
    assert strings.outcome == "not_applicable"
    assert strings.reference_outcome == "failed"
    assert (strings.message or "").startswith("not applicable: the reference fails it")
    assert fixed.signal("pass_rate") == 1.0
    assert "this run: passed" in (_records(fixed)["test_strings"].message or "")
    assert broken.signal("pass_rate") == pytest.approx(1 / 3)  # test_add only


def test_a_baseline_without_a_reference_is_a_usage_error(tmp_path: Path) -> None:
    tests = _task(tmp_path)
    with pytest.raises(ConfigError, match="reference_baseline needs a reference"):
        Evaluator(tests, reference_baseline=True, warm=False)


@pytest.mark.sandbox
def test_a_skip_from_candidate_code_still_counts_against_it(tmp_path: Path) -> None:
    tests = _task(tmp_path)
    skipper = _write(
        tmp_path,
        "skipper.py",
        "import pytest\n\ndef add(a, b):\n    pytest.skip('not today')\n" + FEATURE,
    )
    with Evaluator(tests, reference=tmp_path / "reference.py") as ev:
        result = ev.score(skipper)
        apart = ev.isolated
    records = _records(result)
    # In process the skip reaches pytest (a skip, not a pass); apart it never leaves the
    # candidate's process as one (a failure). Either way, evidence.
    assert records["test_add"].outcome == ("failed" if apart else "skipped")
    assert result.signal("pass_rate") == 0.0
    assert result.signal("tests_not_applicable") == 3
    assert "skip_from_candidate" in {r.code for r in result.integrity.reasons}


@pytest.mark.slow  # starts a process, or takes seconds of CPU
def test_not_applicable_records_stay_out_of_rates_divergence_and_heldout_checks() -> None:
    def record(name: str, outcome: str, heldout: bool) -> TestRecord:
        return TestRecord(f"t.py::{name}", outcome, "call", heldout, 0.1)  # type: ignore[arg-type]

    reference = [
        record("v1", "passed", False),
        record("v2", "skipped", False),
        record("h1", "xfailed", True),
        record("h2", "skipped", True),
    ]
    applicability = ReferenceOutcomes.of(reference, baseline=False)
    candidate = [
        record("v1", "passed", False),
        record("v2", "failed", False),
        record("h1", "failed", True),
        record("h2", "skipped", True),
    ]
    result = build_result(
        applicability.apply(candidate), mode="evaluator", duration_s=1.0, counts_known=True
    )
    assert result.signal("pass_rate") == 1.0
    assert result.signal("visible_pass_rate") == 1.0
    assert result.signal("heldout_pass_rate") is None  # every held-out test is inapplicable
    assert result.signal("tests_not_applicable") == 3
    assert result.integrity.reasons == ()  # no "held-out tests never executed"
    assert [t.outcome for t in result.tests].count("not_applicable") == 3


def test_a_version_1_result_without_the_new_fields_still_reads() -> None:
    record = TestRecord("t.py::a", "passed", "call", False, 0.1)
    data = build_result([record], mode="plugin", duration_s=1.0).to_dict()
    data["schema_version"] = 1
    assert "reference_outcome" not in data["tests"][0]
    assert ScoreResult.from_dict(data).tests[0].reference_outcome is None


@pytest.mark.sandbox
def test_the_cli_takes_the_reference_as_a_baseline(tmp_path: Path) -> None:
    tests = _task(tmp_path)
    (tests / "test_more.py").write_text(
        "from solution import add\n\ndef test_strings():\n    assert add('a', 1) == 'a1'\n",
        encoding="utf-8",
    )
    out = tmp_path / "r.json"
    args = ["--tests", str(tests), "--reference", str(tmp_path / "reference.py")]
    command = [
        sys.executable,
        "-m",
        "pytest_scorewright.cli",
        "score",
        str(tmp_path / "reference.py"),
    ]
    refused = subprocess.run([*command, *args], capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2
    assert "scorewright: error: the reference does not pass its own visible tests" in (
        refused.stderr
    )
    done = subprocess.run(
        [*command, *args, "--reference-baseline", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "2/2 passed (100.0%), 4 not applicable" in done.stderr
    assert ScoreResult.read(out).signal("reference_failures") == 1


def test_adapters_neither_list_nor_count_not_applicable_tests() -> None:
    records = [
        TestRecord("t.py::fine", "passed", "call", False, 0.1),
        TestRecord("t.py::broken", "failed", "call", False, 0.1, "assert 1 == 2"),
        TestRecord(
            "t.py::py2",
            "not_applicable",
            None,
            False,
            0.1,
            "not applicable",
            reference_outcome="skipped",
        ),
        TestRecord(
            "h.py::py2",
            "not_applicable",
            None,
            True,
            0.1,
            "not applicable",
            reference_outcome="xfailed",
        ),
        TestRecord("h.py::fine", "passed", "call", True, 0.1),
    ]
    result = build_result(records, mode="evaluator", duration_s=1.0, counts_known=True)
    found = artifacts(result)
    assert "t.py::broken" in found["scorewright_failing_tests"]
    assert "py2" not in found["scorewright_failing_tests"]
    assert found["scorewright_heldout"] == "1/1 held-out tests passed"
    assert Fitness("weighted").metrics(result)["all_passed"] == 0.0
    assert summary_lines(result, out=None)[0] == (
        "scorewright: 2/3 passed (66.7%), held-out 1/1 (100.0%), 2 not applicable, divergence -0.50"
    )


@pytest.mark.sandbox
def test_a_test_that_fails_once_in_the_reference_is_set_aside_as_flaky(tmp_path: Path) -> None:
    # A timing-sensitive test: it fails in a run that starts before UNTIL (the reference's
    # first run, which waits for it), and passes in any later run. The reference is run again
    # before anything is refused; the test is then not applicable, named as flaky.
    suite = textwrap.dedent(SUITE) + textwrap.dedent(
        """
        def test_timing_sensitive():
            import os, time
            until = float(os.environ["UNTIL"])
            if time.time() < until:
                time.sleep(until - time.time())
                raise AssertionError("too early")
        """
    )
    tests = _task(tmp_path, suite)
    env = {"UNTIL": str(__import__("time").time() + 6)}
    with Evaluator(tests, reference=tmp_path / "reference.py", env=env) as ev:
        result = ev.score(tmp_path / "reference.py")
    flaky = next(t for t in result.tests if t.nodeid.endswith("test_timing_sensitive"))
    assert flaky.outcome == "not_applicable", flaky
    assert (flaky.message or "").startswith("not applicable: the reference is flaky in it"), flaky
    assert "failed 1, passed 2" in (flaky.message or "")
    assert result.signal("pass_rate") == 1.0
    lines = summary_lines(result, None)
    assert any(
        "set aside, flaky in the reference: tests/test_add.py::test_timing_sensitive" in line
        for line in lines
    ), lines


@pytest.mark.sandbox
def test_a_test_the_reference_fails_every_time_still_refuses_the_suite(tmp_path: Path) -> None:
    tests = _task(
        tmp_path, textwrap.dedent(SUITE) + "\ndef test_wrong():\n    assert add(1, 1) == 3\n"
    )
    with pytest.raises(ConfigError, match="reference does not pass its own visible tests"):
        Evaluator(tests, reference=tmp_path / "reference.py").prepare()
