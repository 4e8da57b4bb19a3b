"""The client's side of scoring on an executor: candidates go out as content, the suite as
one bundle, and every candidate comes back as exactly one result, whatever the executor
does (docs/cluster.md).

- **The suite reaches a worker once.** With Dask, the bundle is put in the cluster once
  (a task's result) and every task names it, so each worker fetches it once. With any
  other executor, the first tasks carry it, the rest only its hash; a worker without a
  copy answers ``need_suite`` at once and the candidate goes again with the bundle
  (fanout/remote.py keeps a copy a worker process).
- **Faults are results.** A try the executor loses (a worker killed or out of memory, a
  broken pool), a try a worker could not score, and a result that says the failure was
  ours are tried again, at most ``retries`` more times, each within the candidate's own
  budget; then the candidate gets an ``ok: false``, ``infrastructure: true`` result that
  says what happened on each try (fanout/tries.py: the rule, RayScorer's too).
- **Nothing hangs.** A try gets no more than ``deadline_s`` from the moment a worker could
  have started it (the executor runs at most as many tasks at once as it has slots, in the
  order they were sent); past it, the try is cancelled and counts as lost. A Dask cluster
  with no worker at all for ``deadline_s`` ends the batch: every candidate left gets a
  result saying so.
- **No result is lost or doubled.** A candidate has one try in flight at a time, and an
  answer to a try given up is never read.
"""

from __future__ import annotations

import collections
import dataclasses
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Executor, Future, wait
from pathlib import Path
from typing import Any

from pytest_scorewright.errors import ConfigError
from pytest_scorewright.fanout.content import Tree, TreeBuilder
from pytest_scorewright.fanout.remote import RemoteTask, Reply, held, score_remote
from pytest_scorewright.fanout.suite_bundle import pack_suite
from pytest_scorewright.fanout.tries import Tries, named
from pytest_scorewright.limits import Limits
from pytest_scorewright.result import ScoreResult
from pytest_scorewright.scoring.runs import PATIENCE_S
from pytest_scorewright.scoring.settings import EvaluatorSettings

#: The most times a candidate goes again because its worker had no copy of the suite.
_SUITE_ASKS = 4
#: How often the client looks again at the executor's slots and the tries' deadlines.
_POLL_S = 1.0
#: Where a candidate given up was not scored ("not scored on the executor: ...").
_ON = "the executor"


def pack_candidate(path: Path) -> Tree:
    """A candidate as content: its file, or its directory's files, under its own name,
    by the rules of every copy (symlinks not followed, special files skipped, bounded)."""
    builder = TreeBuilder()
    builder.add(path.name, path, trusted=False)
    return builder.build()


@dataclasses.dataclass
class _Candidate:
    index: int
    path: Path
    #: Its tries, and the rule that ends them (fanout/tries.py).
    tries: Tries
    tree: Tree | None = None
    #: How often it went again because its worker had no copy of the suite.
    suite_asks: int = 0
    #: Send the bundle with its next try (its worker had none, or the cluster lost it).
    carry_suite: bool = False


@dataclasses.dataclass
class _Try:
    candidate: _Candidate
    #: When a worker could first have started it (None: still queued behind others).
    running_since: float | None = None


def remote_deadline_s(limits: Limits, repeats: int) -> float:
    """The longest one try on a worker may take: building the Evaluator there (the trusted
    collection, then the reference's runs, twice when ``isolation`` is auto), then the
    candidate's runs and repeats, each run at most its time limit, its grace period and our
    patience; and a minute for the transfer."""
    run = limits.timeout_s + limits.grace_s + PATIENCE_S
    return (4 + repeats) * run + 60.0


class RemoteBatch:
    """Score ``paths`` on ``executor``'s workers; iterate for ``(index, result)`` as each
    candidate ends, exactly once each.

    The suite travels once to each worker as a bundle keyed by its hash, each candidate as
    its files, so no worker needs this machine's files. A try its worker loses (killed, out
    of memory), or that fails for a reason of ours, goes again up to ``retries`` more times;
    a try with no answer ``deadline_s`` after a worker could have started it is given up
    (:func:`remote_deadline_s` is what the slowest honest try can take). ``slots`` is how
    many the executor runs at once, where it cannot be asked (Dask and the standard pools
    are asked).

    Example::

        batch = RemoteBatch(executor, evaluator.settings, paths,
                            retries=2, deadline_s=600, slots=2, unscored=unscored)
        for index, result in batch:
            ...
    """

    def __init__(
        self,
        executor: Executor,
        settings: EvaluatorSettings,
        paths: Sequence[Path],
        *,
        retries: int,
        deadline_s: float,
        slots: int,
        unscored: Callable[[Path, BaseException], ScoreResult],
    ) -> None:
        if retries < 0:
            raise ConfigError(f"retries must be 0 or more, not {retries}")
        if not deadline_s > 0:
            raise ConfigError(f"deadline_s must be more than 0, not {deadline_s}")
        self._executor = executor
        self._settings = settings
        self._paths = paths
        self._limits = settings.limits
        self._retries = retries
        self._deadline_s = deadline_s
        self._unscored = unscored
        self._client = _dask_client(executor)
        self._slots = _pool_slots(executor) or slots
        self._slots_read = 0.0
        self._no_worker_since: float | None = None
        self._sent = 0
        self._queue: collections.deque[_Candidate] = collections.deque()

    def __iter__(self) -> Iterator[tuple[int, ScoreResult]]:
        suite, portable = pack_suite(self._settings)  # a suite that cannot be read: raised
        shared = self._share(suite)
        self._queue.extend(
            _Candidate(i, p, Tries(p, retries=self._retries, limits=self._limits, on=_ON))
            for i, p in enumerate(self._paths)
        )
        pending: dict[Future[Reply], _Try] = {}
        try:
            while self._queue or pending:
                self._read_slots()
                while self._queue and len(pending) < max(2 * self._slots, 2):
                    candidate = self._queue.popleft()
                    ended = self._submit(candidate, suite, portable, shared, pending)
                    if ended is not None:
                        yield candidate.index, ended
                now = time.monotonic()
                for attempt in list(pending.values())[: self._slots]:
                    if attempt.running_since is None:
                        attempt.running_since = now
                finished, _ = wait(
                    pending, timeout=self._wait_s(pending), return_when=FIRST_COMPLETED
                )
                for future in finished:
                    candidate = pending.pop(future).candidate
                    ended = self._answer(candidate, future)
                    if ended is not None:
                        yield candidate.index, ended
                now = time.monotonic()
                for future, attempt in list(pending.items()):
                    since = attempt.running_since
                    if since is not None and now - since > self._deadline_s:
                        del pending[future]
                        future.cancel()  # its answer, if one ever comes, is never read
                        ended = self._lose(
                            attempt.candidate,
                            f"no answer within {self._deadline_s:g}s of a worker being free",
                        )
                        if ended is not None:
                            yield attempt.candidate.index, ended
                if self._cluster_is_empty(now):
                    why = f"the cluster had no worker for {self._deadline_s:g}s"
                    left = [a.candidate for a in pending.values()] + list(self._queue)
                    for future in pending:
                        future.cancel()
                    pending.clear()
                    self._queue.clear()
                    for candidate in left:
                        yield candidate.index, candidate.tries.give_up(why)
        finally:
            for future in pending:  # the caller stopped early, or an interrupt
                future.cancel()
            if shared is not None:
                shared.release()

    # -- a try --------------------------------------------------------------------------------

    def _submit(
        self,
        candidate: _Candidate,
        suite: Tree,
        portable: EvaluatorSettings,
        shared: Any,
        pending: dict[Future[Reply], _Try],
    ) -> ScoreResult | None:
        """Send ``candidate``'s next try; its result where it ends here: its files went
        away or past the bound (the caller's, never tried again), or the executor refused
        it once too often."""
        if candidate.tree is None:
            try:
                candidate.tree = pack_candidate(candidate.path)
            except ConfigError as exc:
                return self._unscored(candidate.path, exc)
        candidate.tries.sent()
        task = RemoteTask(
            suite=suite.digest,
            settings=portable,
            candidate=candidate.tree,
            token=f"candidate-{candidate.index}-{uuid.uuid4().hex}",
        )
        if shared is not None and not candidate.carry_suite:
            bundle: Any = shared  # Dask hands each task its worker's copy
        elif candidate.carry_suite or self._sent < max(self._slots, 1):
            bundle = suite  # the first tasks, one a slot, bring the workers their copies
        else:
            bundle = None
        try:
            future = self._executor.submit(score_remote, task, bundle)
        except Exception as exc:  # a broken pool, an executor shut down
            return self._lose(candidate, f"the executor refused it ({named(exc)})")
        self._sent += 1
        pending[future] = _Try(candidate)
        return None

    def _answer(self, candidate: _Candidate, future: Future[Reply]) -> ScoreResult | None:
        """The end of a try: the candidate's result, or None when it goes again."""
        if future.cancelled():
            candidate.carry_suite = True  # Dask cancels a task whose data it lost
            return self._lose(candidate, "the executor cancelled it")
        error = future.exception()
        if error is not None:
            candidate.carry_suite = True  # the cluster may have lost its copy with it
            return self._lose(candidate, f"the executor lost it ({named(error)})")
        reply = future.result()
        if not isinstance(reply, Reply):
            return self._lose(candidate, f"the worker answered a {type(reply).__name__}")
        if reply.kind == "need_suite":
            candidate.suite_asks += 1  # not a try lost: it never started
            candidate.carry_suite = True
            if candidate.suite_asks > _SUITE_ASKS:
                return candidate.tries.give_up(
                    f"the workers never kept the suite they were sent (on {reply.worker})"
                )
            self._queue.appendleft(candidate)
            return None
        ended = candidate.tries.answer(reply)
        if ended is None:
            self._queue.appendleft(candidate)  # first in line
        return ended

    def _lose(self, candidate: _Candidate, what: str) -> ScoreResult | None:
        """A try lost: the candidate goes again (first in line), or, past ``retries``
        more tries, ends with a result that says so."""
        ended = candidate.tries.lose(what)
        if ended is None:
            self._queue.appendleft(candidate)
        return ended

    # -- the executor -------------------------------------------------------------------------

    def _share(self, suite: Tree) -> Any:
        """The bundle put in a Dask cluster once, as the result of a task that returns it
        (a Future every scoring task names, fetched once by each worker); in an executor's
        own store where it has one (``share``: RayExecutor's object store); or None.
        Not ``Client.scatter``: a broadcast waits on every worker, a stopped one
        too, with no bound; and a task's result the cluster loses, it computes again."""
        if self._client is None:
            share = getattr(self._executor, "share", None)  # RayExecutor: its object store
            return share(suite) if callable(share) else None
        try:
            return self._client.submit(held, suite, pure=False)
        except Exception:  # a client that is closing: tasks carry the bundle instead
            return None

    def _read_slots(self) -> None:
        """How many tasks the executor runs at once: a Dask cluster's threads, looked up
        at most once a second (workers come and go); a pool's size; else ``slots``."""
        if self._client is None or time.monotonic() - self._slots_read < _POLL_S:
            return
        try:
            self._slots = sum(self._client.nthreads().values())
        except Exception:  # the scheduler is unreachable for now: keep the last count
            return
        self._slots_read = time.monotonic()
        if self._slots:
            self._no_worker_since = None
        elif self._no_worker_since is None:
            self._no_worker_since = self._slots_read

    def _cluster_is_empty(self, now: float) -> bool:
        since = self._no_worker_since
        return since is not None and now - since > self._deadline_s

    def _wait_s(self, pending: dict[Future[Reply], _Try]) -> float:
        """Until the next deadline, and at most a poll's interval."""
        ends = [a.running_since + self._deadline_s for a in pending.values() if a.running_since]
        soonest = min(ends, default=time.monotonic() + _POLL_S)
        return min(max(soonest - time.monotonic(), 0.0) + 0.01, _POLL_S)


def _dask_client(executor: Executor) -> Any:
    """The Dask Client behind ``Client.get_executor()``, or None. ClientExecutor has no
    public way to reach its client; the bundle's one-time broadcast needs it."""
    if type(executor).__module__.startswith("distributed."):
        return getattr(executor, "_client", None)
    return None


def _pool_slots(executor: Executor) -> int | None:
    """A standard pool's size (ProcessPoolExecutor and ThreadPoolExecutor keep it only in
    ``_max_workers``), an executor's own ``slots`` (RayExecutor), or None."""
    slots = getattr(executor, "slots", None) or getattr(executor, "_max_workers", None)
    return slots if isinstance(slots, int) and slots > 0 else None
