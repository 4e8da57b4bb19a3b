"""Pipelines: score_many over several trusted processes scores as one process would, loses
no result when a pipeline dies, and leaves nothing behind when its caller is killed."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_scorewright.errors import ConfigError
from pytest_scorewright.evaluator import Evaluator
from pytest_scorewright.fanout.pipelines import JOBS_PER_PIPELINE, pipeline_sizes
from pytest_scorewright.result import ScoreResult
from tests.conftest import ON_THE_CLOCK

pytestmark = pytest.mark.sandbox

TASK = Path(__file__).resolve().parents[1] / "corpus" / "numbers"
#: Honest, partly right, wrong and gaming candidates (files and directories) of the corpus.
CORPUS = sorted(p for p in (TASK / "candidates").iterdir() if not p.name.startswith("."))
#: Two pipelines of three candidates at once.
WORKERS = 2 * JOBS_PER_PIPELINE - 2


def _evaluator(**options: Any) -> Evaluator:
    return Evaluator(
        TASK / "tests", heldout=TASK / "heldout", reference=TASK / "reference", **options
    )


def _timed_out(result: ScoreResult) -> set[str]:
    return {t.nodeid for t in result.tests if t.outcome == "timeout"}


def _verdict(result: ScoreResult, timed_out: frozenset[str] = frozenset()) -> dict[str, Any]:
    """Everything a result decides, less what a clock measured (the codes read off a clock,
    and the tests ``timed_out`` where it was scored once or the other: a slow one can pass
    its per-test limit in one process and not in another on a loaded machine)."""
    data = json.loads(result.to_json())
    integrity = data["integrity"]
    return {
        "ok": data["ok"],
        "error": data["error"],
        "tests": sorted(
            (t["nodeid"], t["outcome"], t.get("heldout"))
            for t in data["tests"]
            if t["nodeid"] not in timed_out
        ),
        "flagged": integrity["flagged"],
        "rejected": integrity["rejected"],
        "reasons": sorted(r["code"] for r in integrity["reasons"] if r["code"] not in ON_THE_CLOCK),
        # (The rates a test timed out on one side only moves are left out with it.)
        "signals": None
        if timed_out
        else {k: result.signal(k) for k in ("pass_rate", "heldout_pass_rate", "divergence")},
    }


def _agree(got: ScoreResult, expected: ScoreResult, what: str) -> None:
    """Both results decide the same, but for tests timed out on one side only."""
    timed_out = frozenset(_timed_out(got) ^ _timed_out(expected))
    assert _verdict(got, timed_out) == _verdict(expected, timed_out), (
        what,
        set(_verdict(got)["tests"]) ^ set(_verdict(expected)["tests"]),
        # What each side said, in full: a rare difference is to be explained from this.
        [(r.code, r.detail) for r in got.integrity.reasons],
        [(r.code, r.detail) for r in expected.integrity.reasons],
    )


def test_pipeline_sizes_share_the_workers_four_at_most_each() -> None:
    assert pipeline_sizes(4) == [4]
    assert pipeline_sizes(5) == [3, 2]
    assert pipeline_sizes(16) == [4, 4, 4, 4]
    assert pipeline_sizes(17) == [4, 4, 3, 3, 3]
    assert all(sum(pipeline_sizes(n)) == n for n in range(1, 70))


def test_pipelines_score_every_candidate_as_one_process_does() -> None:
    assert pipeline_sizes(WORKERS) == [3, 3]
    with _evaluator() as ev:
        alone = dict(ev.score_many(CORPUS, 1))
        spread = list(ev.score_many(CORPUS, WORKERS))
        assert ev._pipelines.current is not None
        assert ev._pipelines.current.sizes == [3, 3]
    assert sorted(i for i, _ in spread) == list(range(len(CORPUS)))  # each once
    for index, result in spread:
        _agree(result, alone[index], CORPUS[index].name)
    assert any(r.integrity.flagged for r in alone.values())  # gaming ones among them
    assert any(r.signal("pass_rate") == 1.0 for r in alone.values())


def test_a_pipeline_killed_mid_batch_costs_no_result() -> None:
    # Six quick honest ones, each three times: a batch of 18 keeps both pipelines' three
    # workers busy past the kill (the test above scores the whole corpus through pipelines).
    honest = [p for p in CORPUS if p.name.startswith("honest") and p.name != "honest_slow.py"][:6]
    paths = honest * 3
    with _evaluator(dedupe=False) as ev:
        alone = {p: ev.score(p) for p in honest}
        batch = ev.score_many(paths, WORKERS)
        first = [next(batch)]
        assert ev._pipelines.current is not None
        victim = ev._pipelines.current._all[0].proc
        victim.kill()
        rest = list(batch)
        assert victim.wait() == -signal.SIGKILL
        assert ev._pipelines.current._all[0].proc is not victim  # replaced
        again = dict(ev.score_many(honest, WORKERS))  # and the next batch uses it
    results = dict(first + rest)
    assert sorted(results) == list(range(len(paths)))
    # What the dead one had in hand was given out again: every candidate scored.
    for index, result in results.items():
        assert not result.infrastructure, result.error
        _agree(result, alone[paths[index]], paths[index].name)
    assert sorted(again) == list(range(len(honest)))
    for index, result in again.items():
        _agree(result, alone[honest[index]], honest[index].name)


def test_adopting_what_another_evaluator_learned_scores_the_same_without_a_reference_run() -> None:
    with _evaluator() as teacher:
        learned = teacher.learned()
        candidate = TASK / "candidates" / "gaming_b1_always_equal.py"
        expected = _verdict(teacher.score(candidate))
    with _evaluator() as pupil:
        pupil.adopt(learned)
        assert _verdict(pupil.score(candidate)) == expected
        with pytest.raises(ConfigError, match="before this Evaluator's first use"):
            pupil.adopt(learned)


PACKING = TASK.parents[2] / "examples" / "packing"


def test_objectives_from_files_go_to_pipelines_callables_stay_here() -> None:
    programs = [PACKING / n for n in ("initial_program.py", "better.py", "forged.py")] * 2
    source = f"{PACKING / 'objectives.py'}:sum_of_radii"
    spec = importlib.util.spec_from_file_location("packing_objectives", PACKING / "objectives.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    values = []
    for objective in (source, module.sum_of_radii):
        with Evaluator(
            PACKING / "tests", reference=PACKING / "reference", objectives={"radii": objective}
        ) as ev:
            results = dict(ev.score_many(programs, WORKERS))
            assert (ev._pipelines.current is not None) == isinstance(objective, str)
            values.append([results[i].signal("objective_radii") for i in range(len(programs))])
    assert values[0] == values[1]
    initial, better = values[0][:2]
    assert initial is not None
    assert better is not None
    assert better > initial


def test_a_caller_killed_mid_batch_leaves_no_pipeline_run_or_directory() -> None:
    work = Path(tempfile.mkdtemp(prefix="sw-pipelines-killed-"))
    os.chmod(work, 0o755)  # noqa: S103 - the sandbox uids must traverse it
    slow = work.parent / f"{work.name}-slow.py"
    slow.write_text(
        (TASK / "reference" / "solution.py").read_text(encoding="utf-8")
        + "\nimport time\ntime.sleep(60)\n",
        encoding="utf-8",
    )
    script = (
        "import sys\n"
        "from pytest_scorewright.evaluator import Evaluator\n"
        f"ev = Evaluator({str(TASK / 'tests')!r}, heldout={str(TASK / 'heldout')!r}, "
        f"reference={str(TASK / 'reference')!r}, workdir={str(work)!r}, dedupe=False)\n"
        f"pipes = ev._fanout(ev._prepared()).pipelines({WORKERS})\n"
        "print(' '.join(str(p.proc.pid) for p in pipes._all), flush=True)\n"
        f"list(ev.score_many([{str(slow)!r}] * 12, {WORKERS}))\n"
    )
    caller = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert caller.stdout is not None
        pids = [int(p) for p in caller.stdout.readline().split()]
        deadline = time.monotonic() + 60
        # The fixed roots (the caller's, each pipeline's), and a run of each candidate at once.
        expected = 1 + len(pids) + WORKERS
        while time.monotonic() < deadline and len([*work.iterdir()]) < expected:
            time.sleep(0.1)  # every pipeline has runs under way
        assert len([*work.iterdir()]) >= expected
        caller.kill()
        caller.wait()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (any(map(_alive, pids)) or any(work.iterdir())):
            time.sleep(0.1)
        assert not any(map(_alive, pids))
        assert list(work.iterdir()) == []
    finally:
        caller.kill()
        shutil.rmtree(work, ignore_errors=True)
        slow.unlink()


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
    return state != "Z"
