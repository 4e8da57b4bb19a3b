"""The ``benchmark`` fixture: pytest-benchmark's calling convention, timed where the candidate
cannot reach the clock.

A test written for pytest-benchmark runs unchanged::

    def test_sort_speed(benchmark):
        result = benchmark(solution.sort, list(range(1000, 0, -1)))
        assert result == sorted(result)

    def test_exact(benchmark):
        benchmark.pedantic(solution.sort, args=([3, 1, 2],), rounds=50, iterations=10)

The fixture is provided when pytest-benchmark is not active (plugin.py); when it is, it is
pytest-benchmark's and these figures are not taken.

How it measures:

- the clock is ``time.perf_counter`` as bound when this module was imported: our plugin
  imports it when pytest loads plugins, before any test module (and so any candidate code)
  is imported. Replacing ``time.perf_counter`` later changes nothing here, and is tamper
  evidence (child/shared/monitor.py); replacing this module's binding is too (it is watched);
- ``benchmark(fn, ...)`` calibrates: iterations per round until a round takes at least
  ``min_time``, then rounds until ``max_time`` is spent (and at least ``min_rounds``), with a
  hard stop at :data:`HARD_STOP` times ``max_time`` after the first round. A
  ``@pytest.mark.benchmark(max_time=..., min_rounds=..., min_time=...)`` marker sets these, as
  with pytest-benchmark (its other keys are accepted and ignored: above all ``timer``, the
  clock is never the test's to choose);
- with isolation by process every call of a candidate function is a round trip to the
  candidate's process (child/test_process/proxy.py). The test process counts the round trips of each
  round and subtracts, for each, what a null call costs at least: a call of a function of
  ours there that does nothing, with the round's own arguments, on the path every call
  takes (both ends' encoding, the channel, the server's dispatch). It takes the fastest of
  those timed between the rounds (so under the same load), never more than the fastest of
  those timed when the candidate's process started, before it had imported any candidate
  code (the candidate can slow the null calls it serves later, never those). A call's time
  is never taken below :data:`JITTER` of what was subtracted from it: what a function does
  in less time than the round trip's own jitter cannot be measured this way, and reads as
  that floor (docs/objectives.md);
- the figures (per call: median, min, interquartile range, mean, standard deviation; rounds,
  iterations; the raw time of all timed rounds; the round-trip time subtracted) go to the
  trusted parent as one ``benchmark`` message, which checks them against its own clock. In
  plugin mode they stay on the test item, for the result file.
"""

from __future__ import annotations

import itertools
import math
import os
import random
import statistics
import sys
import time
import types
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from pytest_scorewright.child.test_process.timed_results import (
    PRINTED_ROUNDS,
    TimedResults,
    round_print,
    seeded,
)
from pytest_scorewright.kernel.procfs import tree_cpu_s
from pytest_scorewright.protocol import values, wire

#: Bound once, before any candidate code is imported (see the module docstring).
_clock = time.perf_counter

#: Lazy results a timed call may return: their work runs when they are consumed, after the
#: clock would have stopped (a generator "returns" in nanoseconds). Consumed inside the
#: clock; the test gets a fresh iterator over what they yielded.
_LAZY_ITERATORS: tuple[type, ...] = (
    types.GeneratorType,
    map,
    filter,
    zip,
    enumerate,
    reversed,
    type(iter([])),
    type(iter(())),
    type(iter(range(0))),
    type(iter({})),
    type(iter(set())),
    type(iter("")),
    type(iter({}.values())),
    type(iter({}.items())),
    *(
        kind
        for kind in vars(itertools).values()
        if isinstance(kind, type) and hasattr(kind, "__next__")
    ),
)
#: Views: consumed inside the clock too, and handed on as they are.
_VIEWS: tuple[type, ...] = (type({}.keys()), type({}.values()), type({}.items()))
#: Items consumed from one lazy result, at most (beyond: the rest stays lazy, unclocked).
MAX_MATERIALISED = 1_000_000

#: Per-test figures in plugin mode (the collector puts them on the call report).
BENCH_STATS = pytest.StashKey[dict[str, Any]]()

#: pytest-benchmark's marker keys; only the first three change anything here.
MARKER_KEYS = frozenset(
    {
        "max_time",
        "min_rounds",
        "min_time",
        "precision",
        "confidence",
        "timer",
        "group",
        "disable_gc",
        "warmup",
        "warmup_iterations",
        "calibration_precision",
        "cprofile",
    }
)
#: Defaults: time spent timing rounds per test, fewest rounds, shortest round.
MAX_TIME_S = 0.5
MIN_ROUNDS = 5
MIN_TIME_S = 100e-6
#: After the first round, stop at this multiple of max_time whatever min_rounds says: a slow
#: candidate gets fewer rounds, not a timeout.
HARD_STOP = 4.0
MAX_ROUNDS = 10_000
MAX_ITERATIONS = 1_000_000
#: A call is never measured below this share of the round trips subtracted from it.
JITTER = 0.1
#: Null calls timed between a benchmark's rounds: at most, and at least.
MAX_PINGS = 200
MIN_PINGS = 10
#: The shortest time a call can read as, whatever was subtracted.
FLOOR_S = 1e-9
#: After the last timed round, how long the candidate's process is left before its CPU time
#: is read: work it goes on doing after a call returned shows in that time.
SETTLE_S = 0.05


class FixtureAlreadyUsed(Exception):
    """The fixture times one function once per test, as pytest-benchmark's does."""


class RoundTrips:
    """The round trips to the candidate's process (isolation by process): how many have been
    made, and what a null call costs, timed between the rounds."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self.pings: list[float] = []
        self.last: tuple[tuple[Any, ...], dict[str, Any] | None] = ((), None)
        #: Items of a round's result (:func:`items_in`): its crossing back, which no null
        #: call makes, is subtracted by the per-item cost timed before any candidate code.
        self.result_items = 0

    def returned(self, result: Any) -> None:
        """A round's result, told once: what its crossing back costs is not the work."""
        self.result_items = max(self.result_items, items_in(result))

    def count(self) -> int:
        found: int = self.session.round_trips()
        return found

    def sample(self, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None) -> None:
        """Time one null call with a round's arguments (between rounds, never inside one):
        what a call of the candidate's costs apart from its work, the arguments' and a
        result's crossing included."""
        self.last = (args, kwargs)
        if len(self.pings) < MAX_PINGS:
            seconds = self.session.null_call(args, kwargs)
            if seconds is not None:
                self.pings.append(seconds)

    def sample_before_round(self) -> None:
        """The null call of a ``pedantic`` round, made just before it rather than after:
        the test's own work between rounds (``setup``, ``teardown``, copies of the arguments)
        keeps the candidate's process off the CPU, and the first call into it after that
        costs more than a call does (measured: a 30 us function read 50 us over 15 such
        rounds, 33 us with this). With the previous round's arguments, which the candidate
        has seen: the coming round's must not reach it before the round is timed. Before
        the first round, a null call without arguments, not counted."""
        if self.last == ((), None) and not self.pings:
            self.session.null_call()
        else:
            self.sample(*self.last)

    def seconds(self) -> float:
        """What one call costs at least: the fastest null call timed between the rounds,
        never more than the fastest of those timed before any candidate code was imported.
        The fastest, not a typical one: under load a typical round trip varies by more than
        a short call takes, and a low estimate errs on the side of a slower candidate."""
        for _ in range(MIN_PINGS - len(self.pings)):
            self.sample(*self.last)
        cap = self.session.trusted_trip
        per_item = getattr(self.session, "trusted_item", None) or 0.0
        back = per_item * self.result_items
        if cap is not None:
            # The trusted trip and item cost, for this call's items: the null calls served
            # after the candidate's code was imported may be slowed by it, never these.
            args, kwargs = self.last
            cap += per_item * (items_in(args) + items_in(kwargs or {})) + back
        now = min(self.pings) + back if self.pings else None
        known = [t for t in (now, cap) if t is not None and math.isfinite(t)]
        return min(known) if known else 0.0


def items_in(value: Any, budget: int = 100_000) -> int:
    """Plain items in ``value`` (containers' items at any depth, each string or bytes 1 per
    64 characters), counted up to ``budget``: how much a call's arguments or result weigh
    in its crossing. Exact builtin types only; anything else counts 1."""
    count = 0
    for item in values.walk(value, budget):
        count += 1 + (len(item) // 64 if type(item) in (str, bytes, bytearray) else 0)
    return min(count, budget)


class CpuWatch:
    """The CPU time of the candidate's process tree (its threads and children) over a
    benchmark's timed rounds, read in /proc by this process. Only with the candidate apart
    and the run on one CPU: there every CPU second of the candidate's is a second the rounds'
    clock saw, unless the work was done between the rounds or after them (work off the
    clock, integrity/verdict.py)."""

    def __init__(self, trips: RoundTrips | None) -> None:
        self.session = trips.session if trips is not None else None
        self.pid: int | None = None
        self.before: float | None = None
        if self.session is not None and _on_one_cpu():
            self.pid = self.session.candidate_pid()
            self.before = tree_cpu_s(self.pid) if self.pid else None
        #: CPU seconds of calls made between the rounds on purpose (:func:`_warm_up`).
        self.excluded = 0.0

    def exclude(self, call: Callable[[], Any]) -> Any:
        """``call()``, its time left out of the total: its wall time, which on one CPU bounds
        what the candidate's tree can spend meanwhile (no reads of /proc next to a round:
        they would leave the caches cold for it)."""
        started = _clock()
        try:
            return call()
        finally:
            self.excluded += _clock() - started

    def spent(self) -> float | None:
        """CPU seconds since the watch began, read :data:`SETTLE_S` after the last round;
        None if not measured, or the candidate's process was replaced meanwhile."""
        if self.before is None or self.session is None:
            return None
        time.sleep(SETTLE_S)
        if self.session.candidate_pid() != self.pid or self.pid is None:
            return None
        after = tree_cpu_s(self.pid)
        return None if after is None else round(max(0.0, after - self.before - self.excluded), 6)


def _on_one_cpu() -> bool:
    try:
        return len(os.sched_getaffinity(0)) == 1
    except OSError:
        return False


def report_finding(code: str, detail: str) -> None:
    """Integrity evidence from the fixture, filed by the test process's monitor (and counted
    by it, as each of its own findings is); nowhere to file it in plugin mode."""
    from pytest_scorewright.child.shared import monitor

    armed = monitor.armed()
    if armed is not None:
        armed.finding(code, detail)


def round_trips() -> RoundTrips | None:
    """The round trips to the candidate's process, or None when it is in this process."""
    proxy = sys.modules.get("pytest_scorewright.child.test_process.proxy")
    session = proxy.current() if proxy is not None else None
    return RoundTrips(session) if session is not None else None


def summarize(
    per_call: list[float],
    iterations: int,
    total_s: float,
    overhead_s: float,
    first_s: float = 0.0,
) -> dict[str, Any]:
    """The message fields for per-call times (already corrected); ``first_s`` the first
    call's, where every round has the same arguments (0: fresh arguments)."""
    ordered = sorted(per_call)
    if len(ordered) > 1:
        q1, _, q3 = statistics.quantiles(ordered, n=4, method="inclusive")
        stdev = statistics.stdev(ordered)
    else:
        q1 = q3 = ordered[0]
        stdev = 0.0
    return {
        "rounds": len(ordered),
        "iterations": iterations,
        "median_s": statistics.median(ordered),
        "min_s": ordered[0],
        "iqr_s": max(q3 - q1, 0.0),
        "mean_s": statistics.fmean(ordered),
        "stdev_s": stdev,
        "total_s": total_s,
        "overhead_s": overhead_s,
        "first_s": first_s,
    }


class BenchmarkFixture:
    """What the ``benchmark`` fixture gives a test (pytest-benchmark's ``BenchmarkFixture``
    calling convention: ``__call__``, ``pedantic``, ``extra_info``, ``name``, ``group``)."""

    def __init__(
        self,
        request: pytest.FixtureRequest,
        sink: Callable[[dict[str, Any]], None] | None,
        settings: Mapping[str, Any],
    ) -> None:
        self._item = request.node
        self._sink = sink
        self.name = request.node.name
        self.fullname = request.node.nodeid
        self.group = settings.get("group")
        self.extra_info: dict[str, Any] = {}
        self.max_time = _positive(settings.get("max_time", MAX_TIME_S), "max_time")
        self.min_time = _positive(settings.get("min_time", MIN_TIME_S), "min_time")
        self.min_rounds = _count(settings.get("min_rounds", MIN_ROUNDS), "min_rounds", 1)
        self._mode: str | None = None
        #: The figures once measured (the message's fields), else None.
        self.stats: dict[str, Any] | None = None

    def __call__(self, function_to_benchmark: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        self._claim("benchmark(...)")
        return self._auto(function_to_benchmark, args, kwargs)

    def pedantic(
        self,
        target: Callable[..., Any],
        args: tuple[Any, ...] | list[Any] = (),
        kwargs: Mapping[str, Any] | None = None,
        setup: Callable[[], Any] | None = None,
        teardown: Callable[..., Any] | None = None,
        rounds: int = 1,
        warmup_rounds: int = 0,
        iterations: int = 1,
    ) -> Any:
        """Exactly ``rounds`` rounds of ``iterations`` calls, after ``warmup_rounds`` untimed;
        ``setup()`` before each round may return ``(args, kwargs)``; ``teardown`` after it."""
        self._claim("benchmark.pedantic(...)")
        _count(iterations, "iterations", 1)
        _count(rounds, "rounds", 1)
        _count(warmup_rounds, "warmup_rounds", 0)
        if iterations > 1 and setup is not None:
            raise ValueError("Can't use more than 1 `iterations` with a `setup` function.")
        arguments = _RoundArguments((tuple(args), dict(kwargs or {})), setup, self.fullname)
        trips = round_trips()
        result: Any = None
        for _ in range(warmup_rounds):
            call_args, call_kwargs = arguments()
            result = _timed_round(target, call_args, call_kwargs, iterations, None)[1]
            if teardown is not None:
                teardown(*call_args, **call_kwargs)
        check = TimedResults(same_arguments=setup is None)
        timed: list[tuple[float, int]] = []
        prints: list[str] = []
        arguments.made = 0  # the timed rounds' arguments, the same in every run
        watch = CpuWatch(trips)
        # Fresh arguments each round, nothing to tear down, and the candidate's own function
        # timed: the previous round's call is made again before each round (below).
        warming = setup is not None and teardown is None and _candidates_function(target)
        for index in range(rounds):
            call_args, call_kwargs = arguments()
            printed = (
                round_print((call_args, call_kwargs))
                if setup is not None and index < PRINTED_ROUNDS
                else None
            )
            copied = check.before((call_args, call_kwargs))
            pick = check.pick(iterations)
            if trips is not None:
                trips.sample_before_round()
                warming = warming and _warm_up(target, trips.last, watch)
            measured, result, kept = _timed_round(
                target, call_args, call_kwargs, iterations, trips, pick
            )
            timed.append(measured)
            if trips is not None and index < 3:
                trips.returned(result)
            if index == 0:
                check.first(kept)
            check.after(copied, kept)
            if printed is not None and iterations == 1:
                prints.append(printed(result))
            if trips is not None:
                trips.last = (call_args, call_kwargs)
            if teardown is not None:
                teardown(*call_args, **call_kwargs)
        cpu_s = watch.spent()
        self._record(
            timed,
            iterations,
            trips,
            check.check(target),
            first_round=setup is None,
            prints=prints,
            cpu_s=cpu_s,
        )
        return result

    # -- measuring -----------------------------------------------------------------------

    def _auto(self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        trips = round_trips()
        check = TimedResults(same_arguments=True)
        check.before((args, kwargs))  # a copy of the arguments before the first call
        # The first call is the result returned, and the calibration's first step.
        (first, made), result, _ = _timed_round(fn, args, kwargs, 1, trips)
        check.first(result)
        if trips is not None:
            trips.returned(result)
        iterations = 1
        elapsed = first
        while elapsed < self.min_time and iterations < MAX_ITERATIONS:
            grow = self.min_time / max(elapsed, 1e-9) * 1.2
            iterations = min(MAX_ITERATIONS, max(iterations * 2, math.ceil(iterations * grow)))
            (elapsed, _), _, _ = _timed_round(fn, args, kwargs, iterations, trips)
        timed: list[tuple[float, int]] = []
        spent = 0.0
        watch = CpuWatch(trips)
        while len(timed) < MAX_ROUNDS:
            copied = check.before((args, kwargs))
            pick = check.pick(iterations)
            measured, _, kept = _timed_round(fn, args, kwargs, iterations, trips, pick)
            check.after(copied, kept)
            timed.append(measured)
            if trips is not None:
                trips.sample(args, kwargs)  # under the same load, never inside a round
            spent += measured[0]
            if spent >= self.max_time * HARD_STOP:
                break
            if spent >= self.max_time and len(timed) >= self.min_rounds:
                break
        cpu_s = watch.spent()
        self._record(timed, iterations, trips, check.check(fn), cold=(first, made), cpu_s=cpu_s)
        return result

    def _record(
        self,
        timed: list[tuple[float, int]],
        iterations: int,
        trips: RoundTrips | None,
        differs: str | None,
        *,
        cold: tuple[float, int] | None = None,
        first_round: bool = False,
        prints: list[str] | None = None,
        cpu_s: float | None = None,
    ) -> None:
        """``timed``: the rounds. ``first_s`` is the first call's time where every round has
        the same arguments (a cache serves every round after it): ``cold``, one call made
        before the rounds, or with ``first_round`` the first round's."""
        if differs is not None:
            report_finding("timed_result_differs", f"{self.fullname[:200]}: {differs}")
        seconds = trips.seconds() if trips is not None else 0.0
        per_call = []
        overheads = []
        for elapsed, made in timed:
            per_call.append(_per_call(elapsed, made, iterations, seconds))
            overheads.append(made * seconds / iterations)
        first_s = per_call[0] if first_round else 0.0
        if cold is not None:
            first_s = _per_call(*cold, 1, seconds)
        stats = summarize(
            per_call,
            iterations,
            total_s=sum(elapsed for elapsed, _ in timed),
            overhead_s=statistics.median(overheads),
            first_s=first_s,
        )
        self.stats = stats
        if self._sink is not None:
            extra: dict[str, Any] = {"rounds_printed": prints} if prints else {}
            if cpu_s is not None:
                extra["cpu_total_s"] = cpu_s
            self._sink({"type": wire.BENCHMARK, "nodeid": self.fullname, **stats, **extra})
        else:
            self._item.stash[BENCH_STATS] = stats

    def _claim(self, mode: str) -> None:
        if self._mode is not None:
            raise FixtureAlreadyUsed(
                f"Fixture can only be used once. Previously it was used in {self._mode} mode."
            )
        self._mode = mode


class _RoundArguments:
    """A ``pedantic`` round's arguments: those given, or what ``setup()`` returns, with
    ``random`` seeded per round (:func:`_seeded_setup`)."""

    def __init__(
        self,
        given: tuple[tuple[Any, ...], dict[str, Any]],
        setup: Callable[[], Any] | None,
        test: str,
    ) -> None:
        self.given, self.setup, self.test = given, setup, test
        #: Rounds whose arguments were made so far.
        self.made = 0

    def __call__(self) -> tuple[tuple[Any, ...], dict[str, Any]]:
        if self.setup is None:
            return self.given
        made = _seeded_setup(self.setup, self.test, self.made)
        self.made += 1
        if made:
            if self.given[0] or self.given[1]:
                raise TypeError("Can't use `args` or `kwargs` if `setup` returns the arguments.")
            return tuple(made[0]), dict(made[1])
        return self.given


def _candidates_function(target: Callable[..., Any]) -> bool:
    """Whether ``target`` is one of the candidate's functions, called in its process (not a
    function of the test's, whose calls the test may count, nor a method of a candidate's
    object, whose calls may change it)."""
    proxy = sys.modules.get("pytest_scorewright.child.test_process.proxy")
    return proxy is not None and type(target) is proxy.RemoteFunction


def _warm_up(
    target: Callable[..., Any],
    previous: tuple[tuple[Any, ...], dict[str, Any] | None],
    watch: CpuWatch,
) -> bool:
    """Apart, before a ``pedantic`` round with fresh arguments: the previous round's call
    again, untimed, its CPU time left out of the work-off-the-clock check. The test's own
    work between rounds (``setup``, copies of the arguments) runs in this process on the
    same CPU and leaves the candidate's code and data cold in the caches, which the same
    function in one process does not pay (measured: 30 us calls read 40-46 us over 15
    rounds, 34-37 us with this, against 31-33 us under pytest-benchmark). The previous
    round's arguments, which the candidate has seen: nothing of the coming round reaches it
    before it is timed. Only for a function of the candidate's (:func:`_candidates_function`):
    a test's own function is called exactly as often as it asked, as pytest-benchmark does.
    Whether to go on: not after a call that raised (say, its arguments were used up)."""
    args, kwargs = previous
    if not args and not kwargs:
        return True  # no round yet
    try:
        watch.exclude(lambda: target(*args, **(kwargs or {})))
    except Exception:
        return False
    return True


def _seeded_setup(setup: Callable[[], Any], test: str, index: int) -> Any:
    """``setup()`` with ``random`` seeded for this round (child/test_process/timed_results.py): the
    same
    arguments in the reference's run and every candidate's. The state is put back after."""
    state = random.getstate()
    random.seed(seeded(test, index))
    try:
        return setup()
    finally:
        random.setstate(state)


def _per_call(elapsed: float, made: int, iterations: int, trip_s: float) -> float:
    """One call's time in a round of ``iterations`` calls that made ``made`` round trips of
    ``trip_s`` each: never below the floor the round trips' jitter sets."""
    overhead = made * trip_s / iterations
    return max(elapsed / iterations - overhead, FLOOR_S, JITTER * overhead)


def _timed_round(
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    iterations: int,
    trips: RoundTrips | None,
    pick: int = 0,
) -> tuple[tuple[float, int], Any, Any]:
    """((seconds, round trips made), the last call's result, call ``pick``'s result) of
    ``iterations`` calls."""
    counter = trips.count if trips is not None else None
    before = counter() if counter is not None else 0
    result: Any = None
    kept: Any = None
    if iterations == 1:
        started = _clock()
        result = _materialised(fn(*args, **kwargs))
        elapsed = _clock() - started
        kept = result
    else:
        loop = range(iterations)
        started = _clock()
        for index in loop:
            result = _materialised(fn(*args, **kwargs))
            if index == pick:
                kept = result
        elapsed = _clock() - started
    made = counter() - before if counter is not None else 0
    return (elapsed, made), result, kept


def _materialised(result: Any) -> Any:
    """``result`` with its work done now, on the clock: a lazy iterator (a generator,
    ``map``, a candidate's iterator reached through a stand-in) is consumed and handed on as
    a fresh iterator over its items; a dict view is walked and handed on as it is. Anything
    else is returned untouched (checked calls and the parent hold other objects against the
    reference's plain data)."""
    kind = type(result)
    if kind in _VIEWS:
        for _ in result:
            pass
        return result
    if kind in _LAZY_ITERATORS or _is_remote_iterator(kind):
        items = list(itertools.islice(result, MAX_MATERIALISED))
        if len(items) < MAX_MATERIALISED:
            return iter(items)
        return itertools.chain(items, result)
    return result


def _is_remote_iterator(kind: type) -> bool:
    proxy = sys.modules.get("pytest_scorewright.child.test_process.proxy")
    remote = getattr(proxy, "RemoteIterator", None) if proxy is not None else None
    return remote is not None and issubclass(kind, remote)


def _positive(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"benchmark {what} must be a positive number of seconds, not {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"benchmark {what} must be finite, not {value!r}")
    return float(value)


def _count(value: Any, what: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"Must have positive int for `{what}`.")
    return value


def marker_settings(item: pytest.Item) -> dict[str, Any]:
    """The ``@pytest.mark.benchmark(...)`` keys of ``item`` (pytest-benchmark's names)."""
    marker = item.get_closest_marker("benchmark")
    if marker is None:
        return {}
    if marker.args:
        raise ValueError("benchmark mark can't have positional arguments.")
    unknown = sorted(set(marker.kwargs) - MARKER_KEYS)
    if unknown:
        raise ValueError(f"benchmark mark can't have {unknown[0]!r} keyword argument.")
    return dict(marker.kwargs)


# -- the fixture: this module is registered as a plugin when pytest-benchmark is not active --

#: The name this module is registered under (plugin.py).
PLUGIN_NAME = "scorewright-benchmark"
MARKER = (
    "benchmark(max_time=0.5, min_rounds=5, min_time=0.0001): settings of the benchmark "
    "fixture, in pytest-benchmark's names (pytest-scorewright's fixture when pytest-benchmark "
    "is not active)"
)


def benchmark_plugin_active(config: pytest.Config) -> bool:
    """Whether pytest-benchmark's plugin is loaded (by its entry point, named ``benchmark``,
    or by ``-p pytest_benchmark.plugin``): its fixture is then the ``benchmark`` fixture."""
    if config.pluginmanager.has_plugin("benchmark"):
        return True
    return any(
        getattr(plugin, "__name__", "") == "pytest_benchmark.plugin"
        for plugin in config.pluginmanager.get_plugins()
    )


@pytest.fixture
def benchmark(request: pytest.FixtureRequest) -> BenchmarkFixture:
    """Time a function as pytest-benchmark does (``benchmark(fn, *args, **kwargs)``,
    ``benchmark.pedantic(...)``), on a clock the candidate cannot replace; the figures go to
    the result (``tests[].benchmark``, signals ``bench_median_s`` and ``speedup``)."""
    from pytest_scorewright.child.test_process.anchors import ANCHOR_SINK

    sink = request.config.stash.get(ANCHOR_SINK, None)
    return BenchmarkFixture(request, sink, marker_settings(request.node))
