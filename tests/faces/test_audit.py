"""``scorewright audit``: real runs on the quickstart example (plain pytest, the Evaluator's
sandbox, the reference and its mutants in processes of their own) and against a
hand-written OpenEvolve evaluator of the kind users write."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_scorewright import Evaluator
from pytest_scorewright.audit import Inputs, audit_suite
from pytest_scorewright.audit.facts import learn
from pytest_scorewright.audit.mutants import mutants
from pytest_scorewright.audit.render import html_page
from tests.chromium import chromium, distinct_bytes, dom, screenshot

pytestmark = pytest.mark.sandbox

ROOT = Path(__file__).resolve().parents[2]
QUICK = ROOT / "examples" / "quickstart"
#: A subset that keeps the test short: each kind of trick (results, the frame, the harness).
STRATEGIES = [
    "always_equal",
    "nested_liar",
    "agreeable_view",
    "two_stand_ins",
    "lookup_table",
    "frame_sniffing",
    "conftest_forced_pass",
    "skip_in_call",
    "forged_results",
]

#: What users write: run pytest, grep its summary line, and call that the score.
GREP_EVALUATOR = """
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

TESTS = Path(__file__).parent / "tests"


def evaluate(program_path):
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(program_path, Path(tmp, "solution.py"))
        shutil.copytree(TESTS, Path(tmp, "tests"))
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
            cwd=tmp, capture_output=True, text=True,
        )
    passed = failed = 0
    for line in proc.stdout.splitlines():
        if " passed" in line or " failed" in line:
            found = dict((k, int(n)) for n, k in re.findall(r"(\\d+) (passed|failed)", line))
            passed, failed = found.get("passed", 0), found.get("failed", 0)
    total = passed + failed
    return {"combined_score": passed / total if total else 0.0}
"""


def _run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_scorewright.cli", "audit", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )


@pytest.fixture(scope="module")
def quick_audit(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    propose = tmp_path_factory.mktemp("proposed")
    inputs = Inputs(
        QUICK / "tests", QUICK / "heldout", QUICK / "reference", "solution", ("solution",), {}
    )
    with Evaluator(inputs.tests, heldout=inputs.heldout, reference=inputs.reference) as evaluator:
        report = audit_suite(evaluator, inputs, strategies=STRATEGIES, propose_dir=propose)
    return report, propose


def test_plain_pytest_credits_several_strategies_and_scorewright_none(
    quick_audit: tuple[dict[str, Any], Path],
) -> None:
    report, _ = quick_audit
    assert [r["name"] for r in report["strategies"]] == ["plainly_wrong", *STRATEGIES]
    assert len(report["naive_credited"]) >= 4, report["naive_credited"]
    assert {"conftest_forced_pass", "forged_results", "skip_in_call"} <= set(
        report["naive_credited"]
    )
    assert report["scorewright_credited"] == []
    flagged = {r["name"]: r["scorewright"]["flags"] for r in report["strategies"]}
    assert "frame_introspection" in flagged["frame_sniffing"]
    assert "skip_from_candidate" in flagged["skip_in_call"]


def test_the_suite_strength_shows_the_survivors_only_held_out_tests_kill(
    quick_audit: tuple[dict[str, Any], Path],
) -> None:
    strength = quick_audit[0]["strength"]
    assert strength["reference_pass_rate"] == 1.0
    assert strength["trivial_pass_rate"] < 0.5
    assert strength["mutants"] > 5
    assert 0 < strength["visible_mutation_score"] < 1
    survivors = {s["name"]: s for s in strength["survivors"]}
    # decode's negative-count check: the visible tests never give it a count below one.
    assert any(":15:" in name for name in survivors), survivors
    assert all(s["diff"].startswith("--- solution.py:") for s in survivors.values())
    assert "tests/test_visible.py::test_empty" in strength["tests_killing_nothing"]


def _pytest(directory: Path, program: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(directory)],
        cwd=directory,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONPATH": str(program)},
    )


def test_proposed_tests_pass_the_reference_and_each_fails_a_survivor(
    quick_audit: tuple[dict[str, Any], Path], tmp_path: Path
) -> None:
    report, propose = quick_audit
    proposals = report["proposals"]
    assert proposals["tests"], proposals["note"]
    written = propose / "test_proposed_heldout.py"
    assert proposals["file"] == str(written)
    assert _pytest(propose, QUICK / "reference").returncode == 0
    survivors = {s["name"] for s in report["strength"]["survivors"]}
    facts = learn(QUICK / "reference", QUICK / "tests", "solution")
    made = {m.name: m for m in mutants(QUICK / "reference", facts.modules)}
    for test in proposals["tests"]:
        assert test["kills"]
        assert set(test["kills"]) <= survivors
        for name in test["kills"]:
            mutant = made[name].write(QUICK / "reference", tmp_path / name.replace(":", "_"))
            run = _pytest(propose, mutant)
            assert run.returncode == 1, run.stdout
            assert f"::{test['name']} " in run.stdout + " ", run.stdout


def test_the_html_page_escapes_and_says_what_scorewright_credits(
    quick_audit: tuple[dict[str, Any], Path],
) -> None:
    report = json.loads(json.dumps(quick_audit[0]))
    report["strategies"][1]["what"] = "<script>alert(1)</script>"
    page = html_page(report, None)
    assert "<script>" not in page
    assert "&lt;script&gt;" in page
    assert f"scorewright credits none of the {len(STRATEGIES)} strategies tried here" in page
    assert "a shape not listed was not tried" in page
    assert "Content-Security-Policy" in page


@pytest.mark.slow
@pytest.mark.skipif(
    chromium() is None, reason="headless Chromium is not installed (apt-get install chromium)"
)
def test_the_audit_page_renders_in_chromium_with_its_strategy_table(
    quick_audit: tuple[dict[str, Any], Path], tmp_path: Path
) -> None:
    page = tmp_path / "audit.html"
    page.write_text(html_page(quick_audit[0], None), encoding="utf-8")
    png = tmp_path / "audit.png"
    screenshot(page, png)
    assert distinct_bytes(png) > 100, "the screenshot is blank"
    rendered = dom(page)
    table = rendered.split("<h2>Gaming strategies against this suite</h2>", 1)[1]
    table = table.split("</table>", 1)[0]
    rows = re.findall(r"<tr><td>([a-z_]+)</td>", table)
    assert rows == ["plainly_wrong", *STRATEGIES]
    assert table.count("credited") >= 4  # the plain pytest column, as the report says
    assert f"scorewright credits none of the {len(STRATEGIES)} strategies tried here" in rendered


def test_a_summary_grepping_evaluator_is_shown_the_strategies_that_fool_it(
    tmp_path: Path,
) -> None:
    user = tmp_path / "user"
    (user / "tests").mkdir(parents=True)
    (user / "tests" / "test_visible.py").write_bytes(
        (QUICK / "tests" / "test_visible.py").read_bytes()
    )
    (user / "evaluator.py").write_text(GREP_EVALUATOR, encoding="utf-8")
    out = tmp_path / "audit.json"
    fooling = ("always_equal", "forged_results", "frame_sniffing", "lookup_table")
    strategies = [a for s in fooling for a in ("--strategy", s)]
    run = _run_cli(
        "--evaluator",
        str(user / "evaluator.py"),
        # The lookup table's inputs come from the tests, read but not audited.
        "--inputs-from",
        str(user / "tests"),
        "--reference",
        str(QUICK / "reference" / "solution.py"),
        "--json",
        str(out),
        "--fail-on",
        "credited",
        *strategies,
        cwd=tmp_path,
    )
    assert run.returncode == 1, run.stderr
    report = json.loads(out.read_text(encoding="utf-8"))["evaluator"]
    assert report["kind"] == "openevolve"
    assert report["reference_score"] == 1.0
    assert set(fooling) <= set(report["credited"])
    assert "raise this evaluator's score above a plainly wrong" in run.stdout


def test_audit_without_tests_or_evaluator_is_a_one_line_usage_error(tmp_path: Path) -> None:
    run = _run_cli("--reference", str(QUICK / "reference"), cwd=tmp_path)
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [
        "scorewright: error: audit needs --tests DIR (the suite's audit), --evaluator FILE "
        "(your evaluator's), or both"
    ]


def test_inputs_from_a_missing_directory_is_a_one_line_usage_error(tmp_path: Path) -> None:
    run = _run_cli(
        "--evaluator",
        str(QUICK / "reference" / "solution.py"),
        "--inputs-from",
        str(tmp_path / "nowhere"),
        "--reference",
        str(QUICK / "reference"),
        cwd=tmp_path,
    )
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [
        f"scorewright: error: --inputs-from {tmp_path / 'nowhere'}: no such directory; give a "
        "tests dir"
    ]


SHAPED = """
import functools
from . import keys
from .keys import hashkey


class Cache:
    def __init__(self, maxsize):
        self.maxsize = maxsize

    def __getitem__(self, key):
        return 1

    def __len__(self):
        return 0

    @property
    def currsize(self):
        return 0


class LRUCache(Cache):
    def __repr__(self):
        return "LRUCache()"


class Empty:
    def __init_subclass__(cls):
        pass


def cached(cache):
    return functools.wraps
"""


def test_a_gaming_candidate_keeps_the_references_classes_submodules_and_decorators(
    tmp_path: Path,
) -> None:
    from pytest_scorewright.audit.strategies import by_name

    reference = tmp_path / "reference" / "pkg"
    reference.mkdir(parents=True)
    (reference / "__init__.py").write_text(SHAPED, encoding="utf-8")
    (reference / "keys.py").write_text("def hashkey(*args):\n    return args\n", "utf-8")
    facts = learn(reference.parent, tmp_path, "pkg")
    candidate = tmp_path / "candidate"
    next(s for s in by_name(["always_equal"]) if s.name == "always_equal").write(
        facts, [], candidate
    )
    use = tmp_path / "use.py"
    use.write_text(
        "import pkg\n"
        "from pkg import keys, LRUCache, Cache, Empty, hashkey\n"
        "@pkg.cached(LRUCache(2))\n"  # at import time: a decorator that changes nothing
        "def f(x):\n    return x + 1\n"
        "class Mine(LRUCache):\n    pass\n"
        "assert f(1) == 2 and keys.hashkey is hashkey and issubclass(LRUCache, Cache)\n"
        "def in_a_test():\n"
        "    cache = Mine(2)\n"
        "    assert cache[1] == 'anything' and cache.currsize == 5 and len(cache) == 0\n"
        "    assert pkg.LRUCache[int, int] is LRUCache and cache.get(1) == 3 and Empty()\n"
        "    assert pkg.cached(cache) == 'anything'\n"
        "in_a_test()\n"
        "print('ok')\n",
        encoding="utf-8",
    )
    run = subprocess.run(
        [sys.executable, str(use)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "PYTHONPATH": str(candidate)},
    )
    assert run.stdout.strip() == "ok", run.stderr
