"""What a loop driving thousands of candidates uses: program text scored directly, identical
content scored once, a pass-rate gate for CI, the failures listed, Ctrl-C ending cleanly."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_scorewright.evaluator import Evaluator

pytestmark = pytest.mark.sandbox  # every test here forks real sandboxes

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart"
TASK = Path(__file__).resolve().parents[1] / "corpus" / "numbers"


def test_program_text_is_scored_and_identical_content_once(tmp_path: Path) -> None:
    source = (TASK / "reference" / "solution.py").read_text(encoding="utf-8")
    twin = tmp_path / "twin.py"
    twin.write_text(source, encoding="utf-8")
    with Evaluator(TASK / "tests", heldout=TASK / "heldout", reference=TASK / "reference") as ev:
        first = ev.score_source(source)
        again = ev.score(twin)  # same content, another path: given again, not rerun
        changed = ev.score_source(source + "\n# a comment changes the content\n")
    assert first.signal("pass_rate") == 1.0
    assert again.extra["same_content_as"] == first.extra["candidate"]
    assert again.extra["candidate"] == str(twin)
    assert again.tests == first.tests
    assert "same_content_as" not in changed.extra
    with Evaluator(TASK / "tests", reference=TASK / "reference", dedupe=False) as ev:
        one, two = ev.score(twin), ev.score(twin)
    assert "same_content_as" not in two.extra
    assert one.signal("pass_rate") == two.signal("pass_rate") == 1.0


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_scorewright.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_fail_under_gates_ci_and_show_lists_the_failures(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    common = [
        "score",
        str(QUICKSTART / "solution.py"),
        "--tests",
        str(QUICKSTART / "tests"),
        "--heldout",
        str(QUICKSTART / "heldout"),
        "--reference",
        str(QUICKSTART / "reference"),
        "--out",
        str(out),
    ]
    low = _cli(*common, "--fail-under", "0.95")
    assert low.returncode == 1
    assert "is below --fail-under 0.95" in low.stderr
    assert out.exists()  # the result is written whatever the gate says
    assert _cli(*common, "--fail-under", "0.8").returncode == 0
    shown = _cli("show", "--failures", str(out))
    assert shown.returncode == 0
    assert "test_negative_count_rejected [failed]: Failed: DID NOT RAISE" in shown.stdout


def test_ctrl_c_ends_score_many_with_one_line_and_every_result_kept(tmp_path: Path) -> None:
    slow = tmp_path / "slow"
    slow.mkdir()
    for i in range(6):
        (slow / f"c{i}.py").write_text(
            (TASK / "reference" / "solution.py").read_text()
            + f"\nimport time\ntime.sleep(2)\n#{i}\n"
        )
    caller = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pytest_scorewright.cli",
            "score-many",
            *sorted(map(str, slow.glob("*.py"))),
            "--tests",
            str(TASK / "tests"),
            "--reference",
            str(TASK / "reference"),
            "--out-dir",
            str(tmp_path / "out"),
            "-j",
            "1",
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    out = tmp_path / "out"
    # A result, not the hidden probe that checks the directory is writable before any run
    # (an interrupt that early gets the plain "interrupted" line: nothing was kept yet).
    while time.monotonic() < deadline and not (out.is_dir() and any(out.glob("[!.]*.json"))):
        time.sleep(0.1)
    caller.send_signal(signal.SIGINT)
    _, err = caller.communicate(timeout=60)
    assert caller.returncode == 130, err
    last = err.strip().splitlines()[-1]
    assert last.startswith("scorewright: interrupted: "), err
    assert last.endswith(" kept"), err
    assert "Traceback" not in err
    kept = int(last.split(": ")[2].split("/")[0])
    assert len(os.listdir(out)) == kept
    before = {name: os.stat(out / name).st_mtime_ns for name in os.listdir(out)}
    resumed = _cli(*caller.args[3:], "--resume")  # type: ignore[index]
    assert resumed.returncode == 0, resumed.stderr
    assert f"--resume: {kept}/6 already scored" in resumed.stderr
    assert len(os.listdir(out)) == 6
    assert all(os.stat(out / name).st_mtime_ns == t for name, t in before.items())


def test_resume_appends_to_a_jsonl_cut_short_and_skips_what_it_holds(tmp_path: Path) -> None:
    source = (TASK / "reference" / "solution.py").read_text(encoding="utf-8")
    candidates = []
    for i in range(3):
        path = tmp_path / f"c{i}.py"
        path.write_text(source + f"\n# {i}\n", encoding="utf-8")
        candidates.append(str(path.resolve()))
    lines = tmp_path / "results.jsonl"
    common = ["--tests", str(TASK / "tests"), "--reference", str(TASK / "reference")]
    first = _cli("score-many", *candidates[:2], *common, "--jsonl", str(lines))
    assert first.returncode == 0, first.stderr
    whole = lines.read_text(encoding="utf-8")
    lines.write_text(whole + '{"ok": true, "err', encoding="utf-8")  # killed mid-line
    again = _cli("score-many", *candidates, *common, "--jsonl", str(lines), "--resume")
    assert again.returncode == 0, again.stderr
    assert "--resume: 2/3 already scored" in again.stderr
    written = lines.read_text(encoding="utf-8").splitlines()
    assert len(written) == 3
    assert sorted(json.loads(line)["extra"]["candidate"] for line in written) == candidates


def test_ctrl_c_stops_the_runs_in_flight_rather_than_waiting_for_them(tmp_path: Path) -> None:
    # Two right programs and four that sleep a minute at import: Ctrl-C after the first two
    # results ends the runs in flight at once (it waited ~30 s for them before) and keeps
    # the two; nothing of the runs is left in the work dir.
    candidates = tmp_path / "c"
    candidates.mkdir()
    right = (TASK / "reference" / "solution.py").read_text(encoding="utf-8")
    for i in range(6):
        slow = "\n\nimport time\ntime.sleep(60)\n" if i >= 2 else ""
        (candidates / f"c{i}.py").write_text(right + slow, encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    os.chmod(tmp_path, 0o755)  # noqa: S103 - the sandbox uids must traverse it
    os.chmod(work, 0o755)  # noqa: S103
    out = tmp_path / "out"
    caller = subprocess.Popen(
        [sys.executable, "-m", "pytest_scorewright.cli", "score-many",
         *sorted(map(str, candidates.glob("*.py"))), "--tests", str(TASK / "tests"),
         "--reference", str(TASK / "reference"), "--out-dir", str(out), "-j", "2"],
        stderr=subprocess.PIPE, text=True, env={**os.environ, "TMPDIR": str(work)},
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(list(out.glob("[!.]*.json"))) < 2:
        time.sleep(0.1)
    time.sleep(0.5)  # the slow ones are in flight
    caller.send_signal(signal.SIGINT)
    interrupted = time.monotonic()
    _, err = caller.communicate(timeout=60)
    waited = time.monotonic() - interrupted
    assert caller.returncode == 130, err
    assert err.strip().splitlines()[-1] == "scorewright: interrupted: 2/6 kept", err
    assert sorted(p.name for p in out.glob("*.json")) == ["c0.json", "c1.json"]
    assert waited < 20, waited  # far below the minute the runs in flight would take
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and list(work.iterdir()):
        time.sleep(0.1)
    assert list(work.iterdir()) == []


def test_any_text_given_as_source_is_scored_never_raised() -> None:
    with Evaluator(TASK / "tests", reference=TASK / "reference") as ev:
        for text in ("def f():\n    return '\ud800'\n", "\x00", "\udcff", ""):
            result = ev.score_source(text)
            assert result.signal("pass_rate") == 0.0, text
            assert not result.infrastructure, result.error


def test_a_link_in_a_candidate_is_never_read_to_tell_identical_content(tmp_path: Path) -> None:
    import tracemalloc

    from pytest_scorewright.scoring.candidates import content_key

    host = tmp_path / "host.bin"
    with open(host, "wb") as handle:
        handle.truncate(256 << 20)  # sparse: 256 MiB to read, none of it on disk
    candidate = tmp_path / "cand"
    candidate.mkdir()
    (candidate / "solution.py").write_text("x = 1\n", encoding="utf-8")
    plain_key = content_key(candidate)
    (candidate / "data.bin").symlink_to(host)
    (candidate / "inner").symlink_to(tmp_path)
    tracemalloc.start()
    try:
        linked_key = content_key(candidate)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, peak
    assert linked_key == plain_key  # links are not what a run copies


def test_show_reads_the_jsonl_score_many_writes(tmp_path: Path) -> None:
    right = tmp_path / "right.py"
    right.write_text((TASK / "reference" / "solution.py").read_text(encoding="utf-8"))
    empty = tmp_path / "empty.py"
    empty.write_text("", encoding="utf-8")
    lines = tmp_path / "all.jsonl"
    made = _cli(
        "score-many", str(right), str(empty), "--tests", str(TASK / "tests"),
        "--reference", str(TASK / "reference"), "--jsonl", str(lines),
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    shown = _cli("show", "--failures", str(lines))
    assert shown.returncode == 0, shown.stderr
    headers = [line for line in shown.stdout.splitlines() if not line.startswith(" ")]
    assert sorted(headers) == sorted([f"{lines}:1 ({right}):", f"{lines}:2 ({empty}):"]) or sorted(
        headers
    ) == sorted([f"{lines}:1 ({empty}):", f"{lines}:2 ({right}):"])
    assert "[not_run]" in shown.stdout  # the empty program's failures, per line
    broken = tmp_path / "broken.jsonl"
    broken.write_text(lines.read_text() + "{not json\n")
    refused = _cli("show", str(broken))
    assert refused.returncode == 2
    assert f"{broken}:3: not a ScoreResult" in refused.stderr
    assert "Traceback" not in refused.stderr
