"""Scoring on an executor's workers: content not paths, faults as results.

The suite travels as one bundle keyed by its hash, each candidate as its files; a worker
never needs the client's files. Real executors only: a real Dask cluster of ``dask
scheduler`` and ``dask worker`` processes whose workers cannot see the client's directories
(mount namespaces with empty tmpfs over them), and standard process pools; workers are
killed and stopped for real.
"""

from __future__ import annotations

import contextlib
import dataclasses
import multiprocessing
import os
import shutil
import signal
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from pytest_scorewright.errors import ConfigError
from pytest_scorewright.evaluator import Evaluator
from pytest_scorewright.fanout.content import Tree, TreeBuilder, unpack
from pytest_scorewright.fanout.dispatch import pack_candidate
from pytest_scorewright.fanout.remote import RemoteTask, score_remote
from pytest_scorewright.fanout.suite_bundle import pack_suite
from pytest_scorewright.result import ScoreResult
from pytest_scorewright.sandbox.workspace import MAX_BYTES
from pytest_scorewright.scoring.settings import EvaluatorSettings
from tests.conftest import ON_THE_CLOCK, sandbox_processes
from tests.dask_cluster import Cluster, hiding_works

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "numbers"
#: In the held-out tests' source only: it must reach workers and nothing else.
HELDOUT_MARK = "sw-heldout-source-" + uuid.uuid4().hex[:12]

needs_hiding = pytest.mark.skipif(
    hiding_works() is not None, reason=hiding_works() or "hiding works"
)


@pytest.fixture
def task(tmp_path: Path) -> Path:
    """The numbers task in the client's temp dir (where hidden workers cannot look), its
    held-out tests marked; a directory candidate with a conftest.py among its candidates."""
    root = tmp_path / "task"
    shutil.copytree(CORPUS, root, ignore=shutil.ignore_patterns("__pycache__"))
    heldout = root / "heldout" / "test_numbers_heldout.py"
    heldout.write_text(heldout.read_text() + f"\n# {HELDOUT_MARK}\n")
    return root


@pytest.fixture
def worker_tmp() -> Iterator[Path]:
    """A temp dir for workers on this machine: the sandbox uids must traverse it (the
    parents of ``tmp_path`` are private to root)."""
    path = Path(tempfile.mkdtemp(prefix="sw-worker-tmp-"))
    os.chmod(path, 0o755)  # noqa: S103 - the sandbox uids must traverse it
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _evaluator(task: Path) -> Evaluator:
    return Evaluator(task / "tests", heldout=task / "heldout", reference=task / "reference")


def _candidates(task: Path, *names: str) -> list[Path]:
    return [task / "candidates" / name for name in names]


def _essence(result: ScoreResult) -> dict[str, Any]:
    """What scoring the same candidate must give wherever it runs (timings aside)."""
    return {
        "ok": result.ok,
        "error": result.error,
        "infrastructure": result.infrastructure,
        "tests": sorted((t.nodeid, t.outcome, t.heldout) for t in result.tests),
        "signals": {s.name: s.value for s in result.signals if s.unit != "s"},
        "flagged": result.integrity.flagged,
        "reasons": sorted(r.code for r in result.integrity.reasons if r.code not in ON_THE_CLOCK),
        "candidate": result.extra.get("candidate"),
    }


def _agree(got: dict[str, Any], expected: dict[str, Any], what: object = None) -> None:
    """Two essences are equal, but for a per-test limit read off a loaded clock: a test that
    timed out in one place only (a quiet CI run once: honest_slow's fib(30), ``timeout``
    where it was scored locally, ``passed`` on a worker) is left out, with the counts and
    rates it moves."""
    outcomes = [{nodeid: outcome for nodeid, outcome, _ in e["tests"]} for e in (got, expected)]
    timed = {
        nodeid
        for nodeid in outcomes[0].keys() | outcomes[1].keys()
        if (outcomes[0].get(nodeid) == "timeout") != (outcomes[1].get(nodeid) == "timeout")
    }
    if timed:
        got, expected = (
            {**e, "tests": [t for t in e["tests"] if t[0] not in timed], "signals": None}
            for e in (got, expected)
        )
    assert got == expected, (what, sorted(timed))


# -- content: no cluster, no sandbox ----------------------------------------------------------


def test_a_candidate_directory_travels_as_its_files_without_its_symlinks_or_fifos(
    tmp_path: Path,
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("the client's secret")
    candidate = tmp_path / "cand"
    (candidate / "pkg").mkdir(parents=True)
    (candidate / "empty").mkdir()
    (candidate / "solution.py").write_text("from pkg.helper import VALUE\n")
    (candidate / "pkg" / "helper.py").write_text("VALUE = 3\n")
    (candidate / "answers.txt").symlink_to(secret)
    (candidate / "linked").symlink_to(tmp_path)
    os.mkfifo(candidate / "pipe")
    tree = pack_candidate(candidate)
    out = tmp_path / "out"
    out.mkdir()
    assert unpack(tree, out, max_size=10**6, what="candidate") == ["cand"]
    found = sorted(str(p.relative_to(out)) for p in out.rglob("*"))
    assert found == [
        "cand", "cand/empty", "cand/pkg", "cand/pkg/helper.py", "cand/solution.py",
    ]  # fmt: skip
    assert (out / "cand" / "pkg" / "helper.py").read_text() == "VALUE = 3\n"


def test_the_same_files_give_the_same_key_and_a_changed_byte_another(tmp_path: Path) -> None:
    candidate = tmp_path / "solution.py"
    candidate.write_text("def f():\n    return 1\n")
    first, again = pack_candidate(candidate), pack_candidate(candidate)
    candidate.write_text("def f():\n    return 2\n")
    assert first.digest == again.digest != pack_candidate(candidate).digest


def test_a_candidate_past_the_size_bound_is_refused_with_one_line(tmp_path: Path) -> None:
    candidate = tmp_path / "big"
    candidate.mkdir()
    (candidate / "solution.py").write_text("X = 1\n")
    with open(candidate / "blob.bin", "wb") as sparse:  # no disk: a hole
        sparse.truncate(MAX_BYTES + 1)
    with pytest.raises(ConfigError, match=r"too large to score .*MiB\); point at") as caught:
        pack_candidate(candidate)
    assert "\n" not in str(caught.value)


def test_a_tree_whose_content_does_not_match_its_hash_is_refused(tmp_path: Path) -> None:
    (tmp_path / "solution.py").write_text("X = 1\n")
    tree = pack_candidate(tmp_path / "solution.py")
    builder = TreeBuilder()
    (tmp_path / "other.py").write_text("X = 2\n")
    builder.add("solution.py", tmp_path / "other.py", trusted=False)
    forged = Tree(builder.build().blob, tree.size, tree.digest)  # other bytes, same key
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(Exception, match="does not match its hash"):
        unpack(forged, out, max_size=10**6, what="candidate")
    assert list(out.iterdir()) == []


def test_a_tree_naming_a_path_outside_its_directory_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "payload.py").write_text("X = 1\n")
    builder = TreeBuilder()
    builder.add("solution.py", tmp_path / "payload.py", trusted=False)
    builder.add("../escaped.py", tmp_path / "payload.py", trusted=False)
    out = tmp_path / "deep" / "out"
    out.mkdir(parents=True)
    with pytest.raises(Exception, match="outside its directory"):
        unpack(builder.build(), out, max_size=10**6, what="candidate")
    assert not (tmp_path / "deep" / "escaped.py").exists()
    assert list(out.iterdir()) == []


@pytest.mark.slow  # starts a process, or takes seconds of CPU
def test_a_worker_refuses_a_suite_bundle_that_does_not_match_its_hash(task: Path) -> None:
    settings = EvaluatorSettings.of(
        task / "tests", heldout=task / "heldout", reference=task / "reference"
    )
    suite, portable = pack_suite(settings)
    (task / "heldout" / "test_numbers_heldout.py").write_text("def test_x():\n    pass\n")
    other, _ = pack_suite(settings)
    forged = Tree(other.blob, other.size, suite.digest)
    candidate = pack_candidate(task / "candidates" / "honest_memo.py")
    reply = score_remote(RemoteTask(suite.digest, portable, candidate, "t1"), forged)
    assert reply.kind == "refused"
    assert "does not match its hash" in reply.text
    assert HELDOUT_MARK not in reply.text
    assert "test_x" not in reply.text
    # Nothing was kept: the next task with no bundle is asked for one.
    assert score_remote(RemoteTask(suite.digest, portable, candidate, "t2")).kind == "need_suite"


@pytest.mark.slow  # starts a process, or takes seconds of CPU
def test_a_worker_with_another_version_scores_nothing_and_says_which(tmp_path: Path) -> None:
    (tmp_path / "solution.py").write_text("X = 1\n")
    settings = EvaluatorSettings.of(tmp_path)
    task = RemoteTask("0" * 64, settings, pack_candidate(tmp_path / "solution.py"), "t", "0.0.1")
    reply = score_remote(task)
    assert reply.kind == "refused"
    assert "the client 0.0.1; install the same version on the workers" in reply.text


@pytest.mark.sandbox
def test_a_worker_that_cannot_build_the_evaluator_withholds_the_heldout_details(
    task: Path,
) -> None:
    # A reference that passes the visible tests and fails some held-out ones: the worker's
    # Evaluator is refused for it, and the reason must not quote the held-out tests.
    with _evaluator(task) as ev:
        partial = str(task / "candidates" / "honest_partial.py")
        settings = dataclasses.replace(ev.settings, reference=partial)
    suite, portable = pack_suite(settings)
    candidate = pack_candidate(task / "candidates" / "honest_memo.py")
    replies = [
        score_remote(RemoteTask(suite.digest, portable, candidate, "t1"), suite),
        score_remote(RemoteTask(suite.digest, portable, candidate, "t2")),  # at once, kept
    ]
    for reply in replies:
        assert reply.kind == "failed"
        assert reply.text == (
            "the worker could not build the Evaluator: the reference does not pass its own "
            "held-out tests (details withheld: they concern the held-out tests)"
        )


# -- standard process pools --------------------------------------------------------------------


def _spawn_pool(workers: int, **kwargs: Any) -> ProcessPoolExecutor:
    return ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"), **kwargs)


@pytest.mark.sandbox
def test_fresh_pool_processes_ask_for_the_suite_and_score_as_locally(task: Path) -> None:
    # One task a process: every task lands on a process with no copy of the suite, so each
    # after the first is asked for it and sent again with it.
    candidates = _candidates(task, "honest_partial.py", "gaming_a5_conftest", "honest_memo.py")
    with _evaluator(task) as ev, _spawn_pool(1, max_tasks_per_child=1) as pool:
        local = [_essence(ev.score(c)) for c in candidates]
        remote = dict(ev.score_many(candidates, executor=pool))
    assert sorted(remote) == [0, 1, 2]
    for i in range(3):
        _agree(_essence(remote[i]), local[i], i)
    assert len({remote[i].extra["remote"]["worker"] for i in range(3)}) == 3


@pytest.mark.sandbox
def test_a_pool_process_killed_mid_candidate_leaves_every_candidate_a_result(
    task: Path, worker_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    candidates = _candidates(
        task, "honest_memo.py", "honest_slow.py", "honest_partial.py", "honest_slow.py",
        "honest_wrong_fib.py", "honest_slow.py",
    )  # fmt: skip
    # The pool's processes keep their copies of the suite in a temp dir of the test's: the
    # killed one (and the other, which the broken pool ends by a signal) cannot remove it.
    monkeypatch.setenv("TMPDIR", str(worker_tmp))
    with _evaluator(task) as ev, _spawn_pool(2) as pool:
        local = {c: _essence(ev.score(c)) for c in set(candidates)}
        killer = _Killer(lambda: _pool_processes(os.getpid()))
        results = dict(ev.score_many(candidates, executor=pool, retries=1))
        killer.join()
    assert killer.killed, "no pool process was ever seen running a candidate"
    assert sorted(results) == list(range(len(candidates)))
    lost = [i for i, r in results.items() if r.infrastructure]
    assert lost, "the candidate in flight on the killed process must say it was lost"
    for index, result in results.items():
        if index in lost:
            assert not result.ok
            assert "not scored on the executor: " in (result.error or "")
            assert "BrokenProcessPool" in (result.error or "")
            assert not result.integrity.flagged
        else:
            _agree(_essence(result), local[candidates[index]])


def _pool_processes(parent: int) -> list[int]:
    """The spawned pool processes of ``parent``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                status = Path(f"/proc/{entry}/status").read_text()
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            ppid = next(line.split()[1] for line in status.splitlines() if line[:5] == "PPid:")
            if int(ppid) == parent and b"multiprocessing" in cmdline:
                found.append(int(entry))
    return found


class _Killer(threading.Thread):
    """Kills the first of ``processes()`` seen running a sandboxed candidate (SIGKILL)."""

    def __init__(self, processes: Any, kill: Any = None) -> None:
        super().__init__(daemon=True)
        self.processes, self.kill = processes, kill
        self.killed: int | None = None
        self.start()

    def run(self) -> None:
        deadline = time.monotonic() + 120
        while self.killed is None and time.monotonic() < deadline:
            for pid in self.processes():
                if sandbox_processes(pid):
                    (self.kill or (lambda p: os.kill(p, signal.SIGKILL)))(pid)
                    self.killed = pid
                    return
            time.sleep(0.01)


# -- a real Dask cluster -------------------------------------------------------------------------


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    pytest.importorskip("distributed")
    with Cluster(tmp_path / "cluster") as started:
        yield started


@pytest.mark.sandbox
@needs_hiding
@pytest.mark.timeout(600)
def test_workers_that_cannot_see_the_client_score_as_locally_and_a_killed_one_loses_nothing(
    task: Path, cluster: Cluster, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # The client's temp dir (the task and candidates are there), and this repo's tests.
    hidden = [tmp_path_factory.getbasetemp(), CORPUS.parent.parent]
    cluster.add_worker("w1", hide=hidden)
    cluster.add_worker("w2", hide=hidden)
    first = _candidates(
        task, "honest_memo.py", "honest_partial.py", "honest_wrong_fib.py",
        "gaming_a1_lookup.py", "gaming_a5_conftest", "gaming_d4_gc_plugin.py",
    )  # fmt: skip
    second = _candidates(
        task, "honest_slow.py", "honest_memo.py", "honest_slow.py", "honest_partial.py",
        "honest_slow.py", "honest_wrong_fib.py", "honest_slow.py", "honest_noisy.py",
    )  # fmt: skip
    with cluster.client(2) as client, _evaluator(task) as ev:
        assert set(client.run(os.path.exists, str(task)).values()) == {False}
        pids = client.run(os.getpid)
        names = {a: w["name"] for a, w in client.scheduler_info()["workers"].items()}
        local = {c: _essence(ev.score(c)) for c in {*first, *second}}

        results = dict(ev.score_many(first, executor=client.get_executor()))
        assert sorted(results) == list(range(len(first)))
        for index, result in results.items():
            _agree(_essence(result), local[first[index]], first[index].name)
            assert result.extra["remote"]["tries"] == 1
        assert {r.extra["remote"]["worker"] for r in results.values()} <= set(names)

        # The second batch: w1 is killed (nanny and worker, SIGKILL) once it runs a candidate.
        w1 = next(pid for address, pid in pids.items() if names[address] == "w1")
        killer = _Killer(lambda: [w1], kill=lambda _: cluster.kill("w1"))
        started = time.monotonic()
        results = dict(ev.score_many(second, executor=client.get_executor()))
        elapsed = time.monotonic() - started
        killer.join()
    assert killer.killed == w1, "w1 was never seen running a candidate"
    assert sorted(results) == list(range(len(second)))
    for index, result in results.items():
        _agree(_essence(result), local[second[index]], second[index].name)
    assert elapsed < 120, elapsed  # no try waited for a deadline
    deadline = time.monotonic() + 15
    while sandbox_processes(w1) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert sandbox_processes(w1) == []  # the killed worker's runs ended with it
    logs = "".join(cluster.log(name) for name in ("scheduler", "w1", "w2"))
    every = "".join(r.to_json() for r in results.values())
    assert HELDOUT_MARK not in logs + every


@pytest.mark.sandbox
@pytest.mark.timeout(300)
def test_a_worker_its_nanny_ends_for_memory_mid_batch_loses_no_candidate(
    task: Path, cluster: Cluster
) -> None:
    cluster.add_worker("small", memory_limit="700MB")  # its nanny ends it past 95%
    cluster.add_worker("w2")
    candidates = _candidates(
        task, "honest_slow.py", "honest_memo.py", "honest_slow.py", "honest_partial.py",
        "honest_slow.py", "honest_memo.py",
    )  # fmt: skip
    with cluster.client(2) as client, _evaluator(task) as ev:
        local = {c: _essence(ev.score(c)) for c in set(candidates)}
        addresses = {w["name"]: a for a, w in client.scheduler_info()["workers"].items()}
        small = client.run(os.getpid, workers=[addresses["small"]])[addresses["small"]]

        def grow(_: int) -> None:
            def hog() -> None:  # the worker process itself leaks a gigabyte
                import builtins

                builtins._scorewright_hog = b"x" * (1 << 30)  # type: ignore[attr-defined]

            with contextlib.suppress(Exception):  # it may end before it answers
                client.run(hog, workers=[addresses["small"]])

        killer = _Killer(lambda: [small], kill=grow)
        results = dict(ev.score_many(candidates, executor=client.get_executor()))
        killer.join()
    assert killer.killed == small, "the small worker was never seen running a candidate"
    assert "exceeded 95% memory budget" in cluster.log("small")
    assert sorted(results) == list(range(len(candidates)))
    for index, result in results.items():
        _agree(_essence(result), local[candidates[index]], candidates[index].name)


@pytest.mark.sandbox
@pytest.mark.timeout(300)
def test_a_stopped_worker_gives_each_try_a_deadline_and_every_candidate_a_result(
    task: Path, cluster: Cluster
) -> None:
    cluster.add_worker("w1")
    candidates = _candidates(task, "honest_memo.py", "honest_partial.py")
    with cluster.client(1) as client, _evaluator(task) as ev:
        warm = dict(ev.score_many(candidates[:1], executor=client.get_executor()))
        assert warm[0].ok
        cluster.signal("w1", signal.SIGSTOP)  # alive to the scheduler, answering nothing
        started = time.monotonic()
        results = dict(
            ev.score_many(candidates, executor=client.get_executor(), retries=1, deadline_s=3)
        )
        elapsed = time.monotonic() - started
    assert sorted(results) == [0, 1]
    for result in results.values():
        assert not result.ok
        assert result.infrastructure
        assert (result.error or "").startswith(
            "not scored on the executor: no answer within 3s of a worker being free; 2 tries"
        )
    # One slot: the four tries one after another, each given up 3 s after it could start.
    assert 11 < elapsed < 60, elapsed
