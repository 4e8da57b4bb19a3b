"""A ScoreResult as JUnit XML, the report format CI systems read (pytest's own ``--junitxml``
shape: one ``testsuite`` of ``testcase`` elements).

Example::

    from pytest_scorewright.results.junit import junit_xml

    text = junit_xml(ScoreResult.read("fitness.json"))

``failed`` and ``timeout`` are failures; ``error`` an error; ``skipped``, ``xfailed``,
``not_applicable`` and ``not_run`` (a test the run never reported) are skipped, with why;
``xpassed`` and a passed test whose credit the integrity policy withdrew are failures too,
since neither counts as a pass in a score. Messages are cleaned (``_text.clean``). Held-out
tests' names and messages are in the report: it belongs with the trusted side.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from pytest_scorewright._text import clean
from pytest_scorewright.result import ScoreResult, TestRecord


def junit_xml(result: ScoreResult) -> str:
    """The report as text (UTF-8, with its XML declaration)."""
    suite = ET.Element("testsuite", name="scorewright")
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for test in result.tests:
        counts["tests"] += 1
        kind = _kind(test)
        if kind is not None:
            counts[{"failure": "failures", "error": "errors", "skipped": "skipped"}[kind]] += 1
        suite.append(_case(test, kind))
    for name, value in counts.items():
        suite.set(name, str(value))
    suite.set("time", f"{sum(t.duration_s or 0.0 for t in result.tests):.6f}")
    body = ET.tostring(suite, encoding="unicode")
    return '<?xml version="1.0" encoding="utf-8"?>\n' + body + "\n"


def _kind(test: TestRecord) -> str | None:
    if test.outcome == "passed":
        return None if test.credited else "failure"
    if test.outcome in ("failed", "timeout", "xpassed"):
        return "failure"
    if test.outcome == "error":
        return "error"
    return "skipped"  # skipped, xfailed, not_applicable, not_run


def _case(test: TestRecord, kind: str | None) -> ET.Element:
    path, _, name = test.nodeid.partition("::")
    classname = path.removesuffix(".py").replace("/", ".")
    if "::" in name:
        owner, _, name = name.rpartition("::")
        classname += "." + owner.replace("::", ".")
    case = ET.Element("testcase", classname=clean(classname), name=clean(name or path))
    case.set("time", f"{test.duration_s or 0.0:.6f}")
    if kind is not None:
        message = test.outcome if test.credited else f"{test.outcome}, not credited"
        child = ET.SubElement(case, kind, message=clean(message))
        child.text = clean(test.message or "")
    return case
