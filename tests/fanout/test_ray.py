"""Scoring on Ray: a pool of actors, each with a warm Evaluator, behind score_many's executor
path, and a picklable scorer for rollouts. A real Ray cluster (``ray start`` head and worker
nodes, tests/ray_cluster.py) whose worker nodes cannot see the client's directories; nodes,
actors and callers are killed and stopped for real.

One cluster serves the module (an xdist worker's share of it): starting and ending one
costs seconds, and CI has two cores. Each test leaves it as it found it: its pools end their
actors, its drivers disconnect, and a node a test killed is started again before the next."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_scorewright.errors import ConfigError
from pytest_scorewright.evaluator import Evaluator
from pytest_scorewright.fanout.ray_pool import RayExecutor
from tests.conftest import boot_clock, sandbox_processes
from tests.dask_cluster import hiding_works
from tests.fanout.test_remote import CORPUS, _agree, _candidates, _essence, _Killer
from tests.ray_cluster import RayCluster, drive_from_this_process

drive_from_this_process()  # before Ray is imported
ray = pytest.importorskip("ray", reason="needs the [ray] extra (in dev): pip install -e '.[dev]'")
#: In the held-out tests' source only: it must reach worker nodes and nothing else.
HELDOUT_MARK = "sw-heldout-source-" + uuid.uuid4().hex[:12]

pytestmark = [pytest.mark.sandbox, pytest.mark.timeout(300)]
#: Why worker nodes cannot be hidden from the client's files here, or None.
NO_HIDING = hiding_works()


@pytest.fixture(scope="module")
def shared_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RayCluster]:
    """A head and two worker nodes, n1 with one CPU and n2 with two, that cannot see the
    client's temp dir (the tasks and candidates are there) or this repo's tests, where
    hiding works."""
    hidden = [] if NO_HIDING else [tmp_path_factory.getbasetemp(), CORPUS.parent.parent]
    with RayCluster(tmp_path_factory.mktemp("ray")) as started:
        started.add_node("n1", cpus=1, hide=hidden)
        started.add_node("n2", cpus=2, hide=hidden)  # room for n1's actor once n1 is gone
        yield started


@pytest.fixture
def cluster(shared_cluster: RayCluster) -> RayCluster:
    """The module's cluster, with a node an earlier test killed started again."""
    shared_cluster.revive()
    return shared_cluster


@pytest.fixture
def task(tmp_path: Path) -> Path:
    """The numbers task in the client's temp dir (hidden from worker nodes)."""
    root = tmp_path / "task"
    shutil.copytree(CORPUS, root, ignore=shutil.ignore_patterns("__pycache__"))
    heldout = root / "heldout" / "test_numbers_heldout.py"
    heldout.write_text(heldout.read_text() + f"\n# {HELDOUT_MARK}\n")
    return root


def _evaluator(task: Path) -> Evaluator:
    return Evaluator(task / "tests", heldout=task / "heldout", reference=task / "reference")


def _actor_pids(pool: RayExecutor) -> dict[str, int]:
    """Each actor's Ray node id and process id. An actor Ray is starting again answers
    "temporarily unavailable" for a while (once, beside two CPU-bound jobs, right after a
    batch): asked again, for up to 60 s."""
    deadline = time.monotonic() + 60
    while True:
        try:
            return dict(ray.get([handle.where.remote() for handle in pool.handles]))
        except ray.exceptions.ActorUnavailableError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def _spread_pool() -> RayExecutor:
    """Two one-CPU actors on the two worker nodes. SPREAD is a preference, not a rule: a
    node that joined moments ago can be passed over, and both land on n2 (two CPUs, room for
    n1's actor once n1 is killed); a pool like that is made again, a few times at most."""
    for _ in range(5):
        pool = RayExecutor(actors=2, num_cpus=1, actor_options={"scheduling_strategy": "SPREAD"})
        if len(_actor_pids(pool)) == 2:
            return pool
        pool.shutdown()
        time.sleep(1.0)
    return pool


def _gone(pids: list[int], within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while any(os.path.exists(f"/proc/{p}") for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not any(os.path.exists(f"/proc/{p}") for p in pids)


def test_a_pool_refuses_bad_sizes_with_one_line() -> None:
    with pytest.raises(ConfigError, match=r"^actors must be at least 1, not 0$"):
        RayExecutor(actors=0)
    with pytest.raises(ConfigError, match=r"^num_cpus must be more than 0, not 0$"):
        RayExecutor(num_cpus=0)
    with pytest.raises(ConfigError, match=r"^memory_mb must be at least 1, not 0$"):
        RayExecutor(memory_mb=0)


def test_objectives_given_as_callables_are_refused_for_ray_with_one_line(
    task: Path, cluster: RayCluster
) -> None:
    def shortest(submitted: Any) -> float:  # a function of this process's: it cannot travel
        return 0.0

    evaluator = Evaluator(task / "tests", reference=task / "reference", objectives={"n": shortest})
    with cluster.connected(), evaluator as ev, RayExecutor(actors=1, num_cpus=1) as pool:
        with pytest.raises(
            ConfigError,
            match=r"^objectives given as callables cannot go to Ray's actors; "
            r"give them as PATH:FUNCTION$",
        ):
            pool.scorer(ev)
        with pytest.raises(ConfigError, match=r"^objectives given as callables cannot go to"):
            next(ev.score_many(_candidates(task, "honest_memo.py"), executor=pool))


@pytest.mark.skipif(NO_HIDING is not None, reason=NO_HIDING or "hiding works")
def test_actors_that_cannot_see_the_client_score_as_locally_and_a_killed_node_loses_nothing(
    task: Path, cluster: RayCluster
) -> None:
    first = _candidates(
        task, "honest_memo.py", "honest_partial.py", "honest_wrong_fib.py",
        "gaming_a1_lookup.py", "gaming_a5_conftest",
    )  # fmt: skip
    second = _candidates(
        task, "honest_slow.py", "honest_memo.py", "honest_slow.py", "honest_partial.py",
        "honest_slow.py", "honest_wrong_fib.py",
    )  # fmt: skip
    with cluster.connected(), _evaluator(task) as ev, _spread_pool() as pool:
        actors = _actor_pids(pool)
        assert len(actors) == 2, "the two actors must be on two nodes"
        n1 = next(n["NodeID"] for n in ray.nodes() if n["Alive"] and n["Resources"].get("CPU") == 1)
        assert pool.submit(os.path.exists, str(task)).result(timeout=60) is False
        local = {c: _essence(ev.score(c)) for c in {*first, *second}}

        results = dict(ev.score_many(first, executor=pool))
        assert sorted(results) == list(range(len(first)))
        for index, result in results.items():
            _agree(_essence(result), local[first[index]], first[index].name)
            assert result.extra["remote"]["tries"] == 1
            assert result.extra["remote"]["worker"].startswith("ray:")

        # The second batch: node n1 (raylet, actor, runs) is killed once it scores.
        victim = actors[n1]
        killer = _Killer(lambda: [victim], kill=lambda _: cluster.kill("n1"))
        started = time.monotonic()
        results = dict(ev.score_many(second, executor=pool))
        elapsed = time.monotonic() - started
        killer.join()
    logs = "".join(
        p.read_text(errors="replace") for p in cluster.temp.rglob("*.log") if p.is_file()
    )
    assert killer.killed == victim, "n1's actor was never seen running a candidate"
    assert sorted(results) == list(range(len(second)))
    for index, result in results.items():
        _agree(_essence(result), local[second[index]], second[index].name)
    retried = [r for r in results.values() if r.extra["remote"]["tries"] == 2]
    assert retried, "the candidate in flight on n1 must have gone again"
    assert "the executor lost it" in retried[0].extra["remote"]["lost"][0]
    assert elapsed < 120, elapsed  # no try waited for a deadline
    assert _gone([victim], 15)
    assert sandbox_processes(victim) == []  # the killed node's runs ended with it
    assert HELDOUT_MARK not in logs + "".join(r.to_json() for r in results.values())


def test_an_overdue_try_is_unscored_and_its_actor_is_started_again_for_the_next(
    task: Path, cluster: RayCluster
) -> None:
    candidates = _candidates(task, "honest_memo.py", "honest_partial.py")
    with cluster.connected(), _evaluator(task) as ev, RayExecutor(num_cpus=1, actors=1) as pool:
        local = [_essence(ev.score(c)) for c in candidates]
        assert dict(ev.score_many(candidates[:1], executor=pool))[0].ok  # warm
        (stopped,) = _actor_pids(pool).values()
        os.kill(stopped, signal.SIGSTOP)  # alive to Ray, answering nothing
        started = time.monotonic()
        # The deadline covers the next actor building its Evaluator too (the reference's
        # runs): 10 s was too short for that beside two CPU-bound jobs.
        results = dict(ev.score_many(candidates, executor=pool, retries=0, deadline_s=25))
        elapsed = time.monotonic() - started
        (again,) = _actor_pids(pool).values()
    overdue = results[0]
    assert not overdue.ok
    assert overdue.infrastructure
    assert (
        overdue.error == "not scored on the executor: no answer within 25s of a worker being free"
    )
    # The next candidate went to the actor Ray started again, and scored as locally.
    _agree(_essence(results[1]), local[1])
    assert again != stopped
    assert _gone([stopped], 15)
    assert 25 < elapsed < 120, elapsed


def test_rollouts_score_from_ray_tasks_and_await_results_as_locally(
    task: Path, cluster: RayCluster
) -> None:
    sources = [c.read_text() for c in _candidates(task, "honest_memo.py", "honest_wrong_fib.py")]

    def rollout(scorer: Any, completion: str) -> str:  # a trainer's rollout task
        return str(scorer.score_source(completion).to_json())

    async def trainer(scorer: Any) -> list[Any]:  # an async trainer awaits its rewards
        return list(await asyncio.gather(*(scorer.ascore_source(s) for s in sources)))

    with cluster.connected(), _evaluator(task) as ev, RayExecutor(num_cpus=1) as pool:
        local = [_essence(ev.score_source(s)) for s in sources]
        scorer = pool.scorer(ev)
        task_ = ray.remote(num_cpus=1)(rollout)  # the third CPU: two actors have the others
        from_tasks = ray.get([task_.remote(scorer, s) for s in sources])
        awaited = asyncio.run(trainer(scorer))
    from pytest_scorewright.result import ScoreResult

    for scored in ([ScoreResult.from_json(t) for t in from_tasks], awaited):
        for result, expected in zip(scored, local, strict=True):
            assert result.extra["candidate"] == "solution.py"
            _agree({**_essence(result), "candidate": None}, {**expected, "candidate": None})


_CALLER = """
import json, sys, ray
from pathlib import Path
from pytest_scorewright.evaluator import Evaluator
from pytest_scorewright.fanout.ray_pool import RayExecutor

address, task = sys.argv[1], Path(sys.argv[2])
ray.init(address=address, log_to_driver=False)
ev = Evaluator(task / "tests", heldout=task / "heldout", reference=task / "reference")
pool = RayExecutor(actors=2, num_cpus=1)
pids = ray.get([h.where.remote() for h in pool.handles])
print(json.dumps([pid for _, pid in pids]), flush=True)
for _ in ev.score_many([task / "candidates" / "honest_slow.py"] * 8, executor=pool):
    pass
"""


def test_a_caller_that_dies_mid_batch_leaves_no_actor_and_no_run_behind(
    task: Path, cluster: RayCluster
) -> None:
    with cluster.connected():  # only to wait for the nodes
        pass
    since = boot_clock()  # the actors' runs start after this; the user's older processes not
    caller = subprocess.Popen(
        [sys.executable, "-c", _CALLER, cluster.address, str(task)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **cluster.env},
        text=True,
    )
    try:
        assert caller.stdout is not None
        pids = json.loads(caller.stdout.readline())
        killer = _Killer(lambda: pids, kill=lambda _: caller.kill())
        killer.join()
        assert killer.killed in pids, "no actor was ever seen running a candidate"
    finally:
        caller.kill()
        caller.wait(timeout=30)
    assert _gone(pids, 30), "an actor outlived its caller"
    # The actors' warm parents end their runs once they see the actor gone: as soon as they
    # can on a quiet machine; the bound is for a loaded one (once at -n 4, a run still there
    # the moment its actor was).
    deadline = time.monotonic() + 30
    while any(sandbox_processes(pid, since) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in pids:
        assert sandbox_processes(pid, since) == []


def test_the_reward_service_scores_on_ray_and_a_killed_actor_loses_no_request(
    cluster: RayCluster, tmp_path: Path
) -> None:
    import threading
    import urllib.request

    from pytest_scorewright.reward_scoring import RayScoring
    from pytest_scorewright.reward_service import score_one, serve
    from pytest_scorewright.task_dirs import TaskDirs
    from tests.conftest import quickstart_tasks, running

    tasks = quickstart_tasks(tmp_path / "tasks")
    right = Path(__file__).resolve().parents[2] / "examples/quickstart/reference/solution.py"
    source = right.read_text(encoding="utf-8")

    def post(url: str, body: dict[str, Any]) -> dict[str, Any]:
        data = json.dumps(body).encode()
        request = urllib.request.Request(f"{url}/score", data=data, method="POST")  # noqa: S310
        with urllib.request.urlopen(request, timeout=240) as answer:  # noqa: S310 - ours
            found: dict[str, Any] = json.loads(answer.read())
            return found

    local_dirs = TaskDirs(tasks)
    try:
        local = score_one(local_dirs, "rle", source)
    finally:
        local_dirs.close()
    with cluster.connected():
        server = serve(str(tasks), "127.0.0.1", 0, ray=cluster.address, ray_actors=1)
        assert isinstance(server.service.elsewhere, RayScoring)
        pool = server.service.elsewhere.pool
        for url in running(server):
            assert post(url, {"task": "rle", "source": source}) == {
                **local,
                "duration_s": pytest.approx(local["duration_s"], abs=60),
            }
            # The actor SIGKILLed while it scores a slow one: Ray starts it again, the
            # candidate is tried again there, and the request is answered as if nothing
            # had happened.
            (victim,) = _actor_pids(pool).values()
            got: list[dict[str, Any]] = []
            slow = {"task": "rle", "source": source + "\nimport time\ntime.sleep(3)\n"}
            asking = threading.Thread(target=lambda u=url, b=slow, g=got: g.append(post(u, b)))
            asking.start()
            time.sleep(2.0)
            os.kill(victim, signal.SIGKILL)
            asking.join(240)
            assert got[0]["reward"] == pytest.approx(1.0), got[0]
            assert got[0]["verdict"] == "passed"
            (again,) = _actor_pids(pool).values()
            assert again != victim
            # Killed between requests: the next one meets the actor while Ray starts it
            # again ("temporarily unavailable"), and waits for it rather than spending its
            # tries at once (once beside two CPU-bound jobs, all three went in moments).
            os.kill(again, signal.SIGKILL)
            answered = post(url, {"task": "rle", "source": source})
            assert answered["reward"] == pytest.approx(1.0), answered
