"""JUnit XML export: what CI systems read, with pytest's own counts for the same run."""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET

import pytest

from pytest_scorewright.result import ScoreResult
from pytest_scorewright.results.junit import junit_xml

SUITE = """
import pytest

def test_pass():
    pass

def test_fail():
    assert 1 == 2, "one is not two\\x1b[31m"

@pytest.fixture
def broken():
    raise RuntimeError("setup broke")

def test_error(broken):
    pass

def test_skip():
    pytest.skip("not here")

@pytest.mark.xfail(reason="known")
def test_xfail():
    assert False
"""


def _counts(root: ET.Element) -> dict[str, int]:
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    assert suite is not None
    return {k: int(suite.get(k, "0")) for k in ("tests", "failures", "errors", "skipped")}


def test_junit_counts_match_pytests_own_junitxml(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_suite=SUITE)
    pytester.runpytest("--scorewright-out=r.json", "--junitxml=plain.xml")
    ours = ET.fromstring(junit_xml(ScoreResult.read(pytester.path / "r.json")))
    plain = ET.parse(pytester.path / "plain.xml").getroot()
    assert (
        _counts(ours)
        == _counts(plain)
        == {
            "tests": 5,
            "failures": 1,
            "errors": 1,
            "skipped": 2,
        }
    )
    text = ET.tostring(ours, encoding="unicode")
    assert "\x1b" not in text
    assert "one is not two" in text


@pytest.mark.slow  # starts a process, or takes seconds of CPU
def test_the_export_command_writes_junit(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_suite=SUITE)
    pytester.runpytest("--scorewright-out=r.json")
    done = pytester.run(
        sys.executable,
        "-m",
        "pytest_scorewright.cli",
        "export",
        "r.json",
        "--junit",
        "--out",
        "r.xml",
    )
    assert done.ret == 0
    assert _counts(ET.parse(pytester.path / "r.xml").getroot())["tests"] == 5
