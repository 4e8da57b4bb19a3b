"""The run report: what it reads, what it shows, and that a person's browser shows it."""

from __future__ import annotations

import csv
import io
import json
import re
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import ClassVar

import pytest

from benchmarks.synthetic_run import HELDOUT, VISIBLE, write_run
from pytest_scorewright.fitness import Fitness, with_fitness
from pytest_scorewright.report import build
from pytest_scorewright.result import CollectionError, Reason, ScoreResult, TestRecord
from pytest_scorewright.results.measure import build_result
from tests.chromium import chromium, distinct_bytes, dom, screenshot

needs_chromium = pytest.mark.skipif(
    chromium() is None, reason="headless Chromium is not installed (apt-get install chromium)"
)
#: Every chart a run with all kinds of figures shows (one data-chart attribute each).
CHARTS = {"fitness", "pass_rates", "integrity", "statuses", "heat_map", "cost"}


def _result(
    passed: int,
    total: int = 4,
    *,
    generation: int | None = None,
    error: str | None = None,
    timeout: bool = False,
    reasons: tuple[Reason, ...] = (),
    name: str = "cand",
) -> ScoreResult:
    records = [
        TestRecord(
            f"t.py::t{i}",
            "timeout" if timeout and i == 0 else ("passed" if i < passed else "failed"),
            "call",
            i == total - 1,
            0.1,
        )
        for i in range(total)
    ]
    errors = [CollectionError("t.py", error)] if error else []
    if error:
        records = [TestRecord(r.nodeid, "not_run", None, r.heldout, None) for r in records]
    result = build_result(
        records,
        mode="evaluator",
        duration_s=1.0,
        collection_errors=errors,
        counts_known=True,
        reasons=reasons,
        extra={"candidate": f"/c/{name}.py"},
    )
    meta = {"generation": str(generation)} if generation is not None else None
    return with_fitness(result, Fitness(), meta)


def _jsonl(path: Path, results: list[ScoreResult]) -> Path:
    path.write_text("".join(json.dumps(r.to_dict()) + "\n" for r in results))
    return path


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_scorewright.cli", *args],
        capture_output=True,
        text=True,
        check=False,
    )


def test_a_syntax_error_a_hang_a_crash_and_a_rejection_read_differently(tmp_path: Path) -> None:
    results = [
        _result(4, name="perfect"),
        _result(2, name="half"),
        _result(0, name="none"),
        _result(0, error="E   SyntaxError: '(' was never closed", name="syntax"),
        _result(0, error="E   ModuleNotFoundError: No module named 'numpy'", name="imports"),
        _result(0, error="E   RuntimeError: boom", name="crash"),
        _result(1, timeout=True, name="hang"),
        _result(4, reasons=(Reason("early_exit", "os._exit(0)", "gaming"),), name="gamer"),
    ]
    report = build([_jsonl(tmp_path / "run.jsonl", results)], Fitness())
    statuses = {c.label: c.status for c in report.run.candidates}
    assert statuses == {
        "perfect": "passed",
        "half": "partial",
        "none": "failed",
        "syntax": "syntax error",
        "imports": "import error",
        "crash": "crashed",
        "hang": "hang",
        "gamer": "rejected",
    }


class NoScore:
    """A fitness function that fails on every result: the candidates have no fitness."""

    name = "noscore"
    options: ClassVar[dict[str, object]] = {}

    def score(self, metrics: dict[str, float], config: object, context: object) -> dict[str, float]:
        raise ValueError("no")


@pytest.mark.slow  # starts a process, or takes seconds of CPU
def test_a_result_without_a_fitness_reads_no_fitness_in_the_leaderboard(tmp_path: Path) -> None:
    paths = []
    for name, result in (
        ("ok", _result(4, name="ok")),
        ("syntax", _result(0, error="E   SyntaxError: bad", name="syntax")),
        ("hang", _result(1, timeout=True, name="hang")),
    ):
        paths.append(str(result.write(tmp_path / f"{name}.json")))
    done = _cli("leaderboard", *paths, "--fitness", "tests.faces.test_report:NoScore")
    assert done.returncode == 0, done.stderr
    rows = {line.split()[1]: line for line in done.stdout.splitlines()[2:5]}
    assert re.search(r"\berror\s+no fitness\b", rows["ok"]), done.stdout
    assert "syntax error" in rows["syntax"]
    assert re.search(r"\berror\s+hang\b", rows["hang"]), done.stdout


@pytest.mark.slow  # starts a process, or takes seconds of CPU
def test_the_leaderboard_shows_the_top_n_and_says_how_many_were_ranked(tmp_path: Path) -> None:
    paths = [str(_result(i % 5, name=f"c{i}").write(tmp_path / f"c{i}.json")) for i in range(40)]
    page = tmp_path / "board.html"
    done = _cli("leaderboard", *paths, "--top", "3", "--html", str(page))
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == 2 + 3
    html = page.read_text()
    assert "the top 3 of 40 candidates" in html
    assert html.count("<tr") == 1 + 3


def test_figures_follow_the_search_over_generations(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run.jsonl", 600)
    figures = build([run], Fitness()).figures
    assert figures["axis"]["kind"] == "generation"
    assert figures["axis"]["labels"] == [str(g) for g in range(12)]
    best = figures["fitness"]["best_found"]
    assert best == sorted(best), "the best found so far never goes down"
    assert best[-1] > best[0]
    assert "best_confirmed" in figures["fitness"]
    # Gaming starts halfway (benchmarks/synthetic_run.py): the codes say when.
    first = figures["integrity_first_seen"]
    assert set(first) >= {"early_exit", "source_always_equal"}
    assert all(int(g) >= 6 for g in first.values())
    # Each flagged or rejected candidate counted once: no stack is taller than its point.
    stacks = [sum(values) for values in zip(*figures["integrity"].values(), strict=True)]
    assert all(
        height <= size for height, size in zip(stacks, figures["axis"]["sizes"], strict=True)
    )
    assert figures["heat_map"]["unsolved"] == [VISIBLE[-1]]
    assert figures["heat_map"]["tests_total"] == len(VISIBLE) + len(HELDOUT)
    assert set(figures["signals"]) >= {"speedup", "objective_area", "judge_score"}
    assert figures["signals"]["objective_area"]["higher_is_better"] is False
    assert figures["cost"]["cost_usd_total"][-1] > 0
    assert len(figures["top"]) == 50


def test_without_a_generation_results_are_grouped_in_the_order_read(tmp_path: Path) -> None:
    run = _jsonl(tmp_path / "run.jsonl", [_result(i % 4) for i in range(1000)])
    figures = build([run], Fitness()).figures
    assert figures["axis"]["kind"] == "order"
    assert figures["axis"]["labels"][:2] == ["1-4", "5-8"]
    assert sum(figures["axis"]["sizes"]) == 1000
    # Titles say what the axis is: a batch's results are not generations.
    page = build([run], Fitness()).html()
    assert "Fitness in the order read" in page
    assert "over generations" not in page.replace("not in the charts over generations", "")


def test_a_loops_times_and_costs_are_best_when_least() -> None:
    from pytest_scorewright.report.figures import known_direction

    for name in ("duration_s", "scorewright_cpu_s", "max_rss_mb", "cost_usd", "tokens"):
        assert known_direction(name) is False, name
    for name in ("speedup", "pass_rate", "judge_score", "objective_area"):
        assert known_direction(name) is None, name


def test_candidate_text_is_data_in_the_page_and_the_csv(tmp_path: Path) -> None:
    hostile = "<script>alert(1)</script>"
    records = [TestRecord(f"t.py::t[{hostile}]", "failed", "call", False, 0.1, hostile)]
    result = build_result(
        records,
        mode="evaluator",
        duration_s=1.0,
        error=f'=HYPERLINK("x") {hostile}\x1b[31m',
        extra={"candidate": f"/c/{hostile}.py"},
    )
    report = build([_jsonl(tmp_path / "run.jsonl", [result])], Fitness())
    html = report.html()
    assert "<script" not in html
    assert "&lt;script&gt;" in html
    assert "\x1b" not in html
    assert "default-src 'none'" in html  # nothing fetched, no script run, whatever slips by
    assert not re.search(r'(src|href)="(https?:)?//', html)
    rows = list(csv.DictReader(io.StringIO(report.csv())))
    assert rows[0]["error"].startswith("'=HYPERLINK")  # a spreadsheet shows it, never runs it


@pytest.mark.slow  # starts a process, or takes seconds of CPU
def test_csv_has_one_row_per_candidate_with_every_signal(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run.jsonl", 200)
    out = tmp_path / "run.csv"
    done = _cli("report", str(run), "--csv", str(out))
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 200
    assert {"generation", "status", "fitness", "speedup", "judge_score"} <= set(rows[0])
    assert [r["rank"] for r in rows] == [str(i) for i in range(1, 201)]


@pytest.mark.slow  # starts a process, or takes seconds of CPU
def test_bad_input_is_one_line_naming_the_file_and_line(tmp_path: Path) -> None:
    missing = _cli("report", str(tmp_path / "nope.jsonl"), "--html", str(tmp_path / "r.html"))
    assert missing.returncode == 2
    assert missing.stderr.startswith("scorewright: error: report: ")
    assert "does not exist" in missing.stderr
    assert len(missing.stderr.splitlines()) == 1
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(_result(1).to_dict()) + "\nnot json\n" + "{}\n")
    done = _cli("report", str(bad), "--json", str(tmp_path / "r.json"))
    assert done.returncode == 2
    expected = (
        f"scorewright: error: {bad} line 2: not JSON; a JSON Lines file has one ScoreResult "
        "a line (score-many --jsonl writes one)\n"
    )
    assert done.stderr == expected
    nothing = _cli("report", str(tmp_path / "r.json"))
    assert nothing.returncode == 2
    assert "needs --html" in nothing.stderr


def test_a_last_line_cut_short_is_left_out_and_said(tmp_path: Path) -> None:
    run = tmp_path / "run.jsonl"
    whole = json.dumps(_result(2).to_dict())
    run.write_text(whole + "\n" + whole[: len(whole) // 2])
    report = build([run], Fitness())
    assert len(report.run.candidates) == 1
    assert any("cut short" in note for note in report.run.notes)


def test_an_openevolve_output_dir_gives_generation_parent_and_island(tmp_path: Path) -> None:
    database = pytest.importorskip("openevolve.database")
    config = pytest.importorskip("openevolve.config")
    from pytest_scorewright.openevolve import artifacts, to_metrics

    db = database.ProgramDatabase(config.DatabaseConfig(num_islands=2))
    shapes = [
        (None, _result(1)),
        ("p0", _result(0, error="E   SyntaxError: '(' was never closed")),
        ("p0", _result(3, reasons=(Reason("early_exit", "exit", "gaming"),))),
        ("p0", _result(4)),
    ]
    for i, (parent, result) in enumerate(shapes):
        program = database.Program(
            id=f"p{i}",
            code=f"x = {i}\n",
            parent_id=parent,
            generation=0 if parent is None else 1,
            metrics=to_metrics(result),
        )
        db.add(program, iteration=i)
        db.store_artifacts(f"p{i}", artifacts(result))
        if i == 1:  # an early checkpoint: later ones replace its records
            db.save(str(tmp_path / "out" / "checkpoints" / "checkpoint_1"), 1)
    db.save(str(tmp_path / "out" / "checkpoints" / "checkpoint_4"), 4)
    report = build([tmp_path / "out"], Fitness())
    found = {c.label: c for c in report.run.candidates}
    assert set(found) == {"p0", "p1", "p2", "p3"}
    assert (found["p3"].generation, found["p3"].parent) == (1, "p0")
    assert found["p3"].island is not None
    assert found["p1"].status == "syntax error"
    assert found["p2"].status == "rejected"
    assert found["p2"].flags == ("early_exit",)
    assert found["p3"].status == "passed"
    assert found["p3"].fitness == 1.0
    assert report.figures["axis"]["labels"] == ["0", "1"]


def test_a_shinka_database_gives_generation_parent_and_island(tmp_path: Path) -> None:
    # The columns ShinkaEvolve's ProgramDatabase creates (shinka/database/dbase.py), with the
    # metrics our adapter writes (shinka.shinka_files); shinka itself is in the `loops` extra.
    from pytest_scorewright.shinka import shinka_files

    db = sqlite3.connect(tmp_path / "evolution_db.sqlite")
    db.execute(
        "CREATE TABLE programs (id TEXT PRIMARY KEY, code TEXT, language TEXT, parent_id TEXT, "
        "generation INTEGER, timestamp REAL, combined_score REAL, public_metrics TEXT, "
        "private_metrics TEXT, text_feedback TEXT, correct BOOLEAN, metadata TEXT, "
        "island_idx INTEGER)"
    )
    for generation, result in enumerate([_result(1), _result(3), _result(4)]):
        metrics, correct = shinka_files(result)
        db.execute(
            "INSERT INTO programs VALUES (?, '', 'python', ?, ?, ?, ?, ?, ?, '', ?, '{}', ?)",
            (
                f"g{generation}",
                f"g{generation - 1}" if generation else None,
                generation,
                float(generation),
                metrics["combined_score"],
                json.dumps(metrics["public"]),
                json.dumps(metrics["private"]),
                correct["correct"],
                generation % 2,
            ),
        )
    db.commit()
    db.close()
    report = build([tmp_path], Fitness())
    found = [(c.label, c.generation, c.parent, c.island, c.status) for c in report.run.candidates]
    assert found == [
        ("g0", 0, None, 0, "partial"),
        ("g1", 1, "g0", 1, "partial"),
        ("g2", 2, "g1", 0, "passed"),
    ]


@pytest.mark.slow
@needs_chromium
def test_the_report_renders_in_chromium_with_every_chart(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run.jsonl", 600)
    page = tmp_path / "report.html"
    done = _cli("report", str(run), "--html", str(page), "--top", "20")
    assert done.returncode == 0, done.stderr
    png = tmp_path / "report.png"
    screenshot(page, png)
    assert distinct_bytes(png) > 100, "the screenshot is blank"
    rendered = dom(page)
    charts = set(re.findall(r'<svg[^>]* data-chart="([^"]+)"', rendered))
    assert charts >= CHARTS | {"signal-speedup", "signal-objective_area", "signal-judge_score"}
    assert len(re.findall(r'<a href="#c\d+">', rendered)) == 20
    assert len(re.findall(r'<details id="c\d+">', rendered)) == 20


def _page_width(page: Path, tmp_path: Path) -> int:
    """The page's laid-out width in Chromium at a 1280 px window (a copy with a probe script;
    the report's own policy forbids scripts, so the copy drops it)."""
    probe = tmp_path / f"probe-{page.name}"
    text = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page.read_text())
    probe.write_text(
        text.replace(
            "</body>",
            "<script>document.body.setAttribute('data-width', "
            "document.documentElement.scrollWidth)</script></body>",
        )
    )
    found = re.search(r'data-width="(\d+)"', dom(probe))
    assert found, "the probe did not run"
    return int(found.group(1))


@pytest.mark.slow
@needs_chromium
def test_the_report_and_the_leaderboard_fit_a_1280_pixel_window(tmp_path: Path) -> None:
    report = tmp_path / "report.html"
    assert (
        _cli("report", str(write_run(tmp_path / "r.jsonl", 300)), "--html", str(report)).returncode
        == 0
    )
    board = tmp_path / "board.html"
    paths = [str(_result(i % 5, name=f"c{i}").write(tmp_path / f"c{i}.json")) for i in range(60)]
    assert _cli("leaderboard", *paths, "--html", str(board)).returncode == 0
    assert _page_width(report, tmp_path) <= 1280
    assert _page_width(board, tmp_path) <= 1280


def test_what_was_raised_while_importing_names_the_kind_not_pytests_wrapper() -> None:
    from pytest_scorewright.report.status import broken_kind

    # The evaluator's error line, as pytest wraps whatever the candidate raised at import.
    first = "tests/test_visible.py: ImportError: "
    assert broken_kind(first + "RuntimeError: the model forgot (solution.py, line 1)") == "crashed"
    assert broken_kind(first + "ModuleNotFoundError: No module named 'numpy'") == "import error"
    assert broken_kind(first + "SyntaxError: '(' was never closed") == "syntax error"
