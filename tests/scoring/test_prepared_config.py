"""pytest's configuration parsed, and its session started, once in the warm parent
(prepared.py): the same runs as pytest.main in every run, each run with its own
process-wide state, and the warm parent never imports a suite's conftest.py."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pytest_scorewright.evaluator import Evaluator
from pytest_scorewright.result import ScoreResult
from pytest_scorewright.suite.early_hooks import needs_early_conftest, needs_parsing_in_run

pytestmark = pytest.mark.sandbox  # every test here forks real sandboxes

TASK = Path(__file__).resolve().parents[1] / "corpus" / "numbers"
PREPARED = "parsed and session started once, in the warm parent"


def _suite(tmp_path: Path, conftest: str) -> tuple[Path, Path, Path]:
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "conftest.py").write_text(textwrap.dedent(conftest), encoding="utf-8")
    (tests / "test_double.py").write_text(
        textwrap.dedent(
            """
            from solution import double

            def test_double(factor):
                assert double(3) == 3 * factor

            def test_double_zero():
                assert double(0) == 0
            """
        ),
        encoding="utf-8",
    )
    reference = tmp_path / "reference.py"
    reference.write_text("def double(x):\n    return 2 * x\n", encoding="utf-8")
    wrong = tmp_path / "wrong.py"
    wrong.write_text("def double(x):\n    return x * x\n", encoding="utf-8")
    return tests, reference, wrong


def _config_mode(result: ScoreResult) -> str:
    assert result.limits is not None
    return str(result.limits["sandbox"]["pytest_config"])


def test_a_suite_conftest_works_and_is_never_imported_by_the_warm_parent(tmp_path: Path) -> None:
    marker = tmp_path / "imported-outside-the-sandbox"
    tests, reference, wrong = _suite(
        tmp_path,
        f"""
        import pytest

        def _leave_a_mark():  # succeeds only where nothing confines it: the warm parent
            try:
                open({str(marker)!r}, "w").close()
            except OSError:
                pass

        _leave_a_mark()

        @pytest.fixture
        def factor():
            return 2
        """,
    )
    with Evaluator(tests, reference=reference, dedupe=False) as ev:
        good, bad = ev.score(reference), ev.score(wrong)
    assert _config_mode(good) == PREPARED
    assert good.signal("pass_rate") == 1.0
    assert [t.outcome for t in bad.tests] == ["failed", "passed"]
    # Assertion rewriting is the prepared configuration's own: the message explains.
    assert "where 9 = double(3)" in (bad.tests[0].message or "")
    assert not marker.exists()


def _scored_both_ways(tests: Path, reference: Path, wrong: Path) -> tuple[ScoreResult, ScoreResult]:
    """The reference and the wrong candidate, scored from the warm parent's configuration;
    checks that pytest.main in each run (which any PYTEST_* variable forces) agrees."""
    with (
        Evaluator(tests, reference=reference) as prepared,
        Evaluator(tests, reference=reference, env={"PYTEST_ADDOPTS": ""}) as per_run,
    ):
        results = [(ev.score(reference), ev.score(wrong)) for ev in (prepared, per_run)]
    (good, bad), (good_per_run, bad_per_run) = results
    assert _config_mode(good_per_run).startswith("parsed in each run: ")
    assert _summary(good) == _summary(good_per_run)
    assert _summary(bad) == _summary(bad_per_run)
    return good, bad


def test_a_conftest_that_adds_options_gets_their_defaults_as_pytest_main_gives(
    tmp_path: Path,
) -> None:
    # Loaded late, during collection: its options and ini keys still get their defaults,
    # the only values a run can have (the command line and the ini file are ours).
    tests, reference, wrong = _suite(
        tmp_path,
        """
        import pytest

        def pytest_addoption(parser):
            parser.addoption("--factor", default="2")
            parser.addini("offset", "added to the factor", default="0")

        def pytest_configure(config):
            config.addinivalue_line("markers", "slow: a marker registered by the suite")

        @pytest.fixture
        def factor(request):
            config = request.config
            return int(config.getoption("--factor")) + int(config.getini("offset"))
        """,
    )
    assert needs_early_conftest(tests) is None
    good, bad = _scored_both_ways(tests, reference, wrong)
    assert _config_mode(good) == PREPARED
    assert good.signal("pass_rate") == 1.0
    assert bad.signal("pass_rate") == 0.5


@pytest.mark.parametrize(
    "source",
    [
        "pytest_plugins = ['pytester']\n",
        "def pytest_addhooks(pluginmanager):\n    pass\n",
        "def pytest_sessionstart(session):\n    pass\n",
        "from somewhere import pytest_collection\n",
        "try:\n    import x\nexcept ImportError:\n    pytest_plugins = []\n",
        "match 1:\n    case _:\n        pass\n",
    ],
)
def test_early_conftest_uses_are_recognised(tmp_path: Path, source: str) -> None:
    (tmp_path / "testing").mkdir()
    (tmp_path / "testing" / "conftest.py").write_text(source, encoding="utf-8")
    assert needs_early_conftest(tmp_path) is not None


def test_a_conftest_with_early_hooks_is_loaded_by_each_run_before_configuring(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "imported-outside-the-sandbox"
    tests, reference, wrong = _suite(
        tmp_path,
        f"""
        import pytest

        pytest_plugins = ["_pytest.pytester"]
        STARTED = []

        try:  # succeeds only where nothing confines it: the warm parent
            open({str(marker)!r}, "w").close()
        except OSError:
            pass

        def pytest_sessionstart(session):
            STARTED.append(session)

        @pytest.fixture
        def factor(request):
            assert request.config.pluginmanager.has_plugin("_pytest.pytester")
            assert STARTED == [request.session]
            return 2
        """,
    )
    assert needs_parsing_in_run(tests) is None
    good, bad = _scored_both_ways(tests, reference, wrong)
    assert _config_mode(good) == (
        f"parsed once, in the warm parent; configured in each run: {tests / 'conftest.py'} "
        "defines pytest_plugins, so each run loads it before configuring"
    )
    assert good.signal("pass_rate") == 1.0
    assert bad.signal("pass_rate") == 0.5
    assert not marker.exists()


def test_a_conftest_hook_that_acts_while_pytest_parses_sends_runs_through_pytest_main(
    tmp_path: Path,
) -> None:
    tests, reference, _ = _suite(
        tmp_path,
        "import pytest\n\n"
        "def pytest_load_initial_conftests(early_config, parser, args):\n    pass\n\n"
        "@pytest.fixture\ndef factor():\n    return 2\n",
    )
    why = needs_parsing_in_run(tests)
    assert why == f"{tests / 'conftest.py'} defines pytest_load_initial_conftests"
    with Evaluator(tests, reference=reference) as ev:
        good = ev.score(reference)
    assert _config_mode(good) == f"parsed in each run: {why}, which pytest needs while it parses"
    assert good.signal("pass_rate") == 1.0


def test_ordinary_conftest_hooks_do_not_need_early_loading(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(
        '"""Doc."""\nimport pytest\n\nX: int = 1\n\n'
        "def pytest_collection_modifyitems(items):\n    pass\n\n"
        "def pytest_configure(config):\n    pass\n",
        encoding="utf-8",
    )
    (tmp_path / "helpers").mkdir()  # not an initial conftest directory: never read
    (tmp_path / "helpers" / "conftest.py").write_text("pytest_plugins = []\n", encoding="utf-8")
    assert needs_early_conftest(tmp_path) is None


# Honest ones, and tricks that act on pytest itself (a conftest, skips, exits, patched
# reports, plugins registered at run time), where a difference in configuration would show.
CORPUS = [
    "honest_reference.py",
    "honest_wrong_fib.py",
    "honest_partial.py",
    "honest_threads.py",
    "gaming_a5_conftest",
    "gaming_a6_skip.py",
    "gaming_a6_skiptest.py",
    "gaming_b1_always_equal.py",
    "gaming_d1_pytest_exit.py",
    "gaming_d1_os_exit.py",
    "gaming_d4_patch_reports.py",
    "gaming_d6_forge.py",
]


def _summary(result: ScoreResult) -> tuple[object, ...]:
    return (
        [(t.nodeid, t.outcome) for t in result.tests],
        sorted(r.code for r in result.integrity.reasons),
        result.error,
    )


def test_prepared_and_per_run_configuration_give_the_same_results() -> None:
    kwargs = {"heldout": TASK / "heldout", "reference": TASK / "reference"}
    with (
        Evaluator(TASK / "tests", **kwargs) as prepared,  # type: ignore[arg-type]
        # Any PYTEST_* variable in the child's env makes every run parse for itself.
        Evaluator(TASK / "tests", env={"PYTEST_ADDOPTS": ""}, **kwargs) as per_run,  # type: ignore[arg-type]
    ):
        for name in CORPUS:
            candidate = TASK / "candidates" / name
            a, b = prepared.score(candidate), per_run.score(candidate)
            assert _config_mode(a) == PREPARED
            assert _config_mode(b).startswith("parsed in each run: env sets PYTEST_")
            assert _summary(a) == _summary(b), name


def test_a_candidate_that_reaches_for_pytest_through_gc_is_flagged_either_way() -> None:
    # It registers a plugin on the first pytest Config it finds in memory. With prepared
    # configurations that may be one parsed for another suite, so the trick can miss; it is
    # flagged either way.
    kwargs = {"heldout": TASK / "heldout", "reference": TASK / "reference"}
    candidate = TASK / "candidates" / "gaming_d4_gc_plugin.py"
    with Evaluator(TASK / "tests", **kwargs) as ev:  # type: ignore[arg-type]
        result = ev.score(candidate)
    assert _config_mode(result) == PREPARED
    assert result.integrity.flagged
    assert {"gc_introspection", "pytest_tampered"} & {r.code for r in result.integrity.reasons}


def test_the_suites_rewritten_bytecode_is_made_once_and_read_by_pytest(tmp_path: Path) -> None:
    from _pytest.assertion.rewrite import _read_pyc

    from pytest_scorewright.suite.rewritten import lay_down, rewritten_suite

    tests, reference, wrong = _suite(
        tmp_path, "import pytest\n\n@pytest.fixture\ndef factor():\n    return 2\n"
    )
    (tests / "helper.py").write_text("X = 1\n", encoding="utf-8")  # not a test module
    made = rewritten_suite(tests)
    assert sorted(Path(p).name.split(".")[0] for p in made) == ["conftest", "test_double"]
    copy = tmp_path / "copy"
    copy.mkdir()
    for name in ("conftest.py", "test_double.py"):
        (copy / name).write_bytes((tests / name).read_bytes())
    lay_down(made, copy)
    for relative in made:  # pytest's own reader accepts each one, for the copied source
        source = copy / Path(relative).parent.parent / (Path(relative).name.split(".")[0] + ".py")
        assert _read_pyc(source, copy / relative) is not None
    # And a run uses it: bytecode from other source, under the real source's hash, changes
    # what the test does (this is a test of the mechanism; the cache is never built so).
    with Evaluator(tests, reference=reference, dedupe=False) as ev:
        assert ev.score(wrong).signal("pass_rate") == 0.5
        other = tmp_path / "other"
        other.mkdir()
        (other / "test_double.py").write_text(
            "def test_double():\n    pass\n\ndef test_double_zero():\n    pass\n", encoding="utf-8"
        )
        forged = rewritten_suite(other)
        real_hash = next(v for k, v in made.items() if "test_double" in k)[8:16]
        key = next(k for k in forged if "test_double" in k)
        ev._runner.planner._rewritten[tests] = {
            **made,
            key: forged[key][:8] + real_hash + forged[key][16:],
        }
        assert ev.score(wrong).signal("pass_rate") == 1.0


# pytest features whose state lives in the configuration, the session or the process, each
# checked by the suite itself; the run's process-wide state must be its own configuration's.
FEATURE_TESTS = r"""
import faulthandler
import logging
import os
import stat
import sys
import threading
import warnings

import pytest
from _pytest.mark.structures import MARK_GEN
from _pytest.threadexception import thread_exceptions
from _pytest.unraisableexception import unraisable_exceptions

from solution import double


@pytest.fixture(scope="session")
def shared():
    return {"calls": 0}


@pytest.mark.parametrize("x", [0, 1, 5])
def test_parametrized(x, shared):
    shared["calls"] += 1
    assert double(x) == 2 * x


@pytest.mark.skipif(sys.platform == "no such platform", reason="never skipped")
def test_skipif_evaluated(shared):
    assert shared["calls"] == 3


def test_fixtures(tmp_path, capsys, caplog, monkeypatch, recwarn):
    (tmp_path / "f").write_text("x")
    print("to capsys")
    assert capsys.readouterr().out == "to capsys\n"
    logging.getLogger("t").warning("to caplog")
    assert "to caplog" in caplog.text
    monkeypatch.setenv("SW_FEATURE", "1")
    assert os.environ["SW_FEATURE"] == "1"
    warnings.warn("to recwarn", UserWarning)
    assert len(recwarn) == 1
    with pytest.warns(DeprecationWarning):
        warnings.warn("deprecated", DeprecationWarning)


def test_process_state_is_this_runs(request):
    config = request.config
    assert MARK_GEN._config is config
    assert sys.unraisablehook.keywords["append"].__self__ is config.stash[unraisable_exceptions]
    assert threading.excepthook.keywords["append"].__self__ is config.stash[thread_exceptions]
    assert faulthandler.is_enabled()
    assert os.environ["PYTEST_VERSION"] == pytest.__version__
    assert config.get_terminal_writer()._file is sys.stdout


def test_only_pipes_and_dev_null_are_open():
    null = os.stat(os.devnull).st_rdev
    for fd in range(3, 256):
        try:
            mode = os.fstat(fd)
        except OSError:
            continue
        assert stat.S_ISFIFO(mode.st_mode) or (
            stat.S_ISCHR(mode.st_mode) and mode.st_rdev == null
        ), fd
"""


def test_a_started_session_runs_pytests_features_as_a_run_of_its_own(tmp_path: Path) -> None:
    tests = tmp_path / "tests"
    (tests / "sub").mkdir(parents=True)
    (tests / "test_features.py").write_text(FEATURE_TESTS, encoding="utf-8")
    # The same module twice: two configurations, two sessions started in the warm parent.
    heldout = tmp_path / "heldout"
    heldout.mkdir()
    (heldout / "test_features_again.py").write_text(FEATURE_TESTS, encoding="utf-8")
    # A deeper conftest.py is loaded during collection, as ever, even with a hook that
    # pytest only calls for initial ones.
    (tests / "sub" / "conftest.py").write_text(
        "import pytest\n\ndef pytest_sessionstart(session):\n    raise AssertionError\n\n"
        "@pytest.fixture\ndef deep():\n    return 3\n",
        encoding="utf-8",
    )
    (tests / "sub" / "test_deep.py").write_text(
        "def test_deep(deep):\n    assert deep == 3\n", encoding="utf-8"
    )
    reference = tmp_path / "reference.py"
    reference.write_text("def double(x):\n    return 2 * x\n", encoding="utf-8")
    kwargs = {"heldout": heldout, "reference": reference}
    with (
        Evaluator(tests, **kwargs) as started,  # type: ignore[arg-type]
        Evaluator(tests, env={"PYTEST_ADDOPTS": ""}, **kwargs) as per_run,  # type: ignore[arg-type]
    ):
        a, b = started.score(reference), per_run.score(reference)
    assert _config_mode(a) == PREPARED
    assert _config_mode(b).startswith("parsed in each run: ")
    assert _summary(a) == _summary(b)
    assert {t.outcome for t in a.tests} == {"passed"}
    assert len(a.tests) == 2 * 7 + 1


def test_other_plugins_are_configured_in_each_run(tmp_path: Path) -> None:
    tests, reference, wrong = _suite(
        tmp_path, "import pytest\n\n@pytest.fixture\ndef factor():\n    return 2\n"
    )
    # xdist's plugin module stands for any plugin we do not know to configure cleanly.
    with Evaluator(tests, reference=reference, plugins=["pytest_timeout", "xdist.plugin"]) as ev:
        good, bad = ev.score(reference), ev.score(wrong)
    assert _config_mode(good) == (
        "parsed once, in the warm parent; configured in each run: plugins ['xdist.plugin']"
    )
    assert good.signal("pass_rate") == 1.0
    assert bad.signal("pass_rate") == 0.5


def test_a_session_that_fails_to_start_leaves_the_warm_parent_as_it_was(tmp_path: Path) -> None:
    # In a fresh interpreter, like the warm parent: a configure hook that raises midway.
    (tmp_path / "s.ini").write_text("[pytest]\n", encoding="utf-8")
    script = textwrap.dedent(
        f"""
        from _pytest.config import _prepareconfig
        from pytest_scorewright.child.test_process.resume import process_state
        from pytest_scorewright.suite.warm_config import _open_fds, _start

        class Broken:
            def pytest_configure(self, config):
                raise RuntimeError("configure fails")

        state, fds = process_state(), _open_fds()
        args = [{str(tmp_path)!r}, "-c", {str(tmp_path / "s.ini")!r}]
        assert _start(_prepareconfig(args, [Broken()])) is None
        assert process_state() == state, (process_state(), state)
        assert _open_fds() == fds, (_open_fds(), fds)
        print("restored")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False, cwd=tmp_path
    )
    assert done.stdout.strip() == "restored", done.stderr


def test_a_pythonpath_ini_finds_the_suites_helpers_in_a_warm_run(tmp_path: Path) -> None:
    # The warm parent parses with the work dir still empty: the import system must not keep
    # "nothing there" for the ini's pythonpath directories (child/test_process/resume.py).
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "helper.py").write_text("EXPECTED = 4\n", encoding="utf-8")
    (tests / "conftest.py").write_text("from helper import EXPECTED  # noqa: F401\n")
    (tests / "test_double.py").write_text(
        "from helper import EXPECTED\nfrom solution import double\n\n\n"
        "def test_double():\n    assert double(2) == EXPECTED\n",
        encoding="utf-8",
    )
    solution = tmp_path / "solution.py"
    solution.write_text("def double(x):\n    return 2 * x\n", encoding="utf-8")
    with Evaluator(tests, reference=solution, ini={"pythonpath": "tests"}) as evaluator:
        result = evaluator.score(solution)
    assert result.ok, result.error
    assert [t.outcome for t in result.tests] == ["passed"]
