"""What the test process's monitor watches besides its own: the identities of the reporter and
the trusted probes (anchored values, the benchmark fixture, re-checked assertions) that run
next to candidate code in the test process. The candidate's process never loads these."""

from __future__ import annotations

from pytest_scorewright.child.test_process import anchors, bench, recheck
from pytest_scorewright.child.test_process.reporter import ChildReporter


def test_process_identities() -> tuple[tuple[str, str, str], ...]:
    """Every (module, class or "", attribute) of ours the test process's monitor snapshots,
    named from the objects themselves, so a moved module moves its entry with it."""
    ours: list[tuple[str, str, str]] = [
        (ChildReporter.__module__, "ChildReporter", method.__name__)
        for method in (
            ChildReporter.pytest_runtest_logreport,
            ChildReporter.pytest_runtest_makereport,
            ChildReporter.pytest_sessionfinish,
            ChildReporter.pytest_collection,
        )
    ]
    ours.append((anchors.__name__, "Scorewright", anchors.Scorewright.expect.__name__))
    ours.append((anchors.__name__, "Scorewright", anchors.Scorewright.submit.__name__))
    # The benchmark fixture's clock, bound before any candidate code, and what times with it.
    ours.append((bench.__name__, "", "_clock"))
    ours += [
        (bench.__name__, "BenchmarkFixture", method.__name__)
        for method in (
            bench.BenchmarkFixture.__call__,
            bench.BenchmarkFixture.pedantic,
            bench.BenchmarkFixture._auto,
            bench.BenchmarkFixture._record,
        )
    ]
    ours += [
        (bench.__name__, "RoundTrips", method.__name__)
        for method in (bench.RoundTrips.count, bench.RoundTrips.sample, bench.RoundTrips.seconds)
    ]
    ours += [
        (function.__module__, "", function.__name__)
        for function in (
            anchors.encode,
            anchors.make_anchor,
            anchors.submission,
            bench._timed_round,
            bench.summarize,
            bench.round_trips,
            recheck.check,
            recheck.call,
            recheck.module_start,
            recheck.module_done,
        )
    ]
    return tuple(ours)
