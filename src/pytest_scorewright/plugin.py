"""The pytest plugin: options, markers, hook registration (the work: pluginmode/recorder.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

import pytest_scorewright.hookspecs as hookspecs
from pytest_scorewright.child.test_process import bench
from pytest_scorewright.child.test_process.anchors import Scorewright
from pytest_scorewright.errors import OutputPathError
from pytest_scorewright.pluginmode.plugin_options import PluginSettings, add_options
from pytest_scorewright.pluginmode.recorder import ScoreRecorder
from pytest_scorewright.result import check_writable

if TYPE_CHECKING:
    from pathlib import Path

    from pytest_scorewright.pluginmode.coverage_session import CoverageSession

HELDOUT_MARKER = (
    "heldout: a held-out test, scored apart from the visible tests to measure divergence "
    "(pytest-scorewright)"
)

_COVERAGE_KEY: pytest.StashKey[CoverageSession] = pytest.StashKey()
_COLLECTOR_KEY = pytest.StashKey[ScoreRecorder]()


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    # Coverage starts before conftest files and test modules import the code under test,
    # the same point in every process (xdist workers parse their config the same way), so
    # `-n N` measures what `-n 0` measures.
    settings = PluginSettings.from_config(early_config, early_config.known_args_namespace)
    if settings.cov_sources:
        # Imported here: coverage costs ~35 ms to import, paid only when asked for.
        from pytest_scorewright.pluginmode.coverage_session import CoverageSession

        session = CoverageSession(settings.cov_sources, branch=settings.cov_branch)
        session.start()
        early_config.stash[_COVERAGE_KEY] = session


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", HELDOUT_MARKER)
    # Our benchmark fixture steps aside for pytest-benchmark's (whose own hooks refuse any
    # other `benchmark` fixture); otherwise tests written for it run on ours unchanged.
    if not bench.benchmark_plugin_active(config) and not config.pluginmanager.has_plugin(
        bench.PLUGIN_NAME
    ):
        config.addinivalue_line("markers", bench.MARKER)
        config.pluginmanager.register(bench, bench.PLUGIN_NAME)
    settings = PluginSettings.from_config(config)
    if not settings.active:
        return
    is_worker = hasattr(config, "workerinput")
    out = None if is_worker else _writable(config, settings.out, "--scorewright-out")
    ctrf = None if is_worker else _writable(config, settings.ctrf, "--scorewright-ctrf")
    coverage = config.stash.get(_COVERAGE_KEY, None)
    if coverage is not None and _is_xdist_controller(config):
        coverage.discard()  # the workers measure; their data is merged at the end
    collector = ScoreRecorder(config, settings, out, coverage, ctrf=ctrf)
    config.stash[_COLLECTOR_KEY] = collector
    config.pluginmanager.register(collector, "scorewright-collector")


def _writable(config: pytest.Config, path: Path | None, option: str) -> Path | None:
    if path is None:
        return None
    target = config.invocation_params.dir / path
    try:
        check_writable(target)
    except OutputPathError as exc:
        raise pytest.UsageError(f"{option}: {exc}") from None
    return target


def pytest_unconfigure(config: pytest.Config) -> None:
    collector = config.stash.get(_COLLECTOR_KEY, None)
    if collector is not None:
        config.pluginmanager.unregister(collector)
        del config.stash[_COLLECTOR_KEY]
    coverage = config.stash.get(_COVERAGE_KEY, None)
    if coverage is not None:
        coverage.stop()
        del config.stash[_COVERAGE_KEY]


@pytest.hookimpl(trylast=True)
def pytest_scorewright_heldout(item: pytest.Item) -> bool | None:
    return item.get_closest_marker("heldout") is not None


def _is_xdist_controller(config: pytest.Config) -> bool:
    # xdist turns `-n N` (N > 0) into a `--dist` mode before pytest_configure; workers run
    # with dist "no".
    return not hasattr(config, "workerinput") and config.getoption("dist", "no") != "no"


@pytest.fixture
def scorewright(request: pytest.FixtureRequest) -> Scorewright:
    """Anchored checks: ``scorewright.expect(value)`` sends ``value`` to the trusted parent,
    which compares it with the reference solution's (evaluator mode; a no-op otherwise)."""
    return Scorewright(request)
