"""What ``scorewright audit`` reads from a real library's suite and keeps of its reference:
``parametrize`` tables named by the test module (inflection's ``SINGULAR_TO_PLURAL``),
starred arguments (humanize's ``intcomma(*test_args)``), and module data a test reads while
it is collected (``__version__``, ``for w in lib.UNCOUNTABLES``). Real files, a real oracle
process, a real import of the generated candidate."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_scorewright.audit.facts import learn
from pytest_scorewright.audit.oracle import Answer, answers, site_request
from pytest_scorewright.audit.proposals import inputs
from pytest_scorewright.audit.strategies import by_name

WORDS = """
from ._version import __version__

UNCOUNTABLES = {"fish", "sheep"}


def plural(word):
    if word in UNCOUNTABLES:
        return word
    return word + ("es" if word.endswith("x") else "s")


def clamp(low, value, high):
    return max(low, min(value, high))


def main(argv):
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("word")
    print(plural(parser.parse_args(argv).word))
    return 0
"""

TESTS = """
import pytest

import words

SINGULAR_TO_PLURAL = (
    ("box", "boxes"),
    ("cat", "cats"),
)


@pytest.mark.parametrize(("singular", "expected"), SINGULAR_TO_PLURAL)
def test_plural(singular, expected):
    assert words.plural(singular) == expected


@pytest.mark.parametrize("args, expected", [([1, 5, 3], 3), ((0, -2, 9), 0)])
def test_clamp(args, expected):
    assert words.clamp(*args) == expected


def test_main_needs_a_word():
    with pytest.raises(SystemExit):
        words.main([])


@pytest.mark.parametrize(("word",), [(w,) for w in words.UNCOUNTABLES])
def test_uncountable(word):
    assert words.plural(word) == word
"""


#: Plain pytest, as a hand-written evaluator runs it.
PLAIN_PYTEST = (
    sys.executable,
    "-m",
    "pytest",
    "-q",
    "-p",
    "no:cacheprovider",
    "-p",
    "no:scorewright",
)


def _library(tmp_path: Path) -> tuple[Path, Path]:
    package = tmp_path / "reference" / "words"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(WORDS, encoding="utf-8")
    (package / "_version.py").write_text("__version__ = version = '1.2'\n", encoding="utf-8")
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_words.py").write_text(TESTS, encoding="utf-8")
    return package.parent, tests


@pytest.mark.slow  # starts a process, or takes seconds of CPU
def test_named_parametrize_tables_and_starred_arguments_are_read_and_answered(
    tmp_path: Path,
) -> None:
    reference, tests = _library(tmp_path)
    facts = learn(reference, tests, "words")
    calls = {(c.function, c.args, c.bindings) for c in facts.calls}
    assert calls == {
        ("plural", ("singular",), (("singular", "'box'"), ("expected", "'boxes'"))),
        ("plural", ("singular",), (("singular", "'cat'"), ("expected", "'cats'"))),
        ("clamp", ("*args",), (("args", "[1, 5, 3]"), ("expected", "3"))),
        ("clamp", ("*args",), (("args", "(0, -2, 9)"), ("expected", "0"))),
        ("main", ("[]",), ()),
    }  # the comprehension over UNCOUNTABLES is code, not a table: not read
    found = answers(reference, ["words"], facts.names, [site_request(c) for c in facts.calls])
    assert sorted((a.function, a.args, a.outcome, a.value) for a in found) == [
        ("clamp", "(0, -2, 9)", "returned", "0"),
        ("clamp", "(1, 5, 3)", "returned", "3"),
        # argparse's exit is an outcome of that call, not the end of every call's answer
        ("main", "([],)", "raised", "SystemExit"),
        ("plural", "('box',)", "returned", "'boxes'"),
        ("plural", "('cat',)", "returned", "'cats'"),
    ]


def test_new_strings_keep_the_shape_of_the_ones_seen_with_new_numbers_in_it() -> None:
    drawn = set(
        inputs([Answer("match", "('2.3.7', '>=2.3.6')", "{}", "returned", "True")])["match"]
    )
    shaped = {d for d in drawn if re.fullmatch(r"\('\d+\.\d+\.\d+', '>=\d+\.\d+\.\d+'\)", d)}
    assert len(shaped) >= len(drawn) // 2  # most draws are versions a parser accepts
    assert drawn == set(
        inputs([Answer("match", "('2.3.7', '>=2.3.6')", "{}", "returned", "True")])["match"]
    )


@pytest.mark.slow  # starts a process, or takes seconds of CPU
def test_a_gaming_candidate_keeps_the_literal_data_its_tests_read_while_collected(
    tmp_path: Path,
) -> None:
    reference, tests = _library(tmp_path)
    facts = learn(reference, tests, "words")
    candidate = tmp_path / "candidate"
    next(s for s in by_name(["always_equal"]) if s.name == "always_equal").write(
        facts, [], candidate
    )
    run = subprocess.run(
        [*PLAIN_PYTEST, str(tests)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(candidate), "PYTEST_ADDOPTS": ""},
    )
    # Collected whole (a stub function in UNCOUNTABLES' place would end the session with
    # "errors during collection"), and every test that compares a value passes plain
    # pytest: the trick works (its answer never raises SystemExit).
    assert run.stdout.splitlines()[-1].startswith("1 failed, 6 passed"), run.stdout + run.stderr
    shown = "import words; print(words.__version__, sorted(words.UNCOUNTABLES))"
    check = subprocess.run(
        [sys.executable, "-c", shown],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "PYTHONPATH": str(candidate)},
    )
    assert check.stdout.strip() == "1.2 ['fish', 'sheep']", check.stderr
