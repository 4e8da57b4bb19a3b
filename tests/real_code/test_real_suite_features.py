"""What real projects' suites use, each scored through the evaluator: unittest TestCases and
subTest, Hypothesis, async tests (anyio), data files next to the tests, conftest
fixtures and declared plugins, packages and src layouts as candidates, tmp_path,
subprocesses and multiprocessing. Each suite passes with its reference and catches a bug."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from pytest_scorewright.evaluator import Evaluator
from pytest_scorewright.limits import Limits
from pytest_scorewright.result import ScoreResult

pytestmark = pytest.mark.sandbox  # every test here forks real sandboxes

RIGHT = "def mean(xs):\n    return sum(xs) / len(xs)\n"
WRONG = "def mean(xs):\n    return sum(xs) // len(xs)\n"  # right for whole means only


def _files(root: Path, files: Mapping[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return root


def _score(
    tests: Path, reference: Path, candidates: Mapping[str, Path], **kwargs: Any
) -> dict[str, ScoreResult]:
    with Evaluator(tests, reference=reference, **kwargs) as ev:
        results = {name: ev.score(path) for name, path in candidates.items()}
    # What real suites do is not evidence against the code they test. (Static findings are
    # left out: the scan reads a package's __main__.py, which real CLIs have, as module code
    # that "reads sys.argv"; which static findings count is the integrity layer's decision.)
    for name, result in results.items():
        runtime = [r for r in result.integrity.reasons if not r.detail.startswith("source ")]
        assert runtime == [], (name, runtime)
    return results


def _outcomes(result: ScoreResult) -> dict[str, str]:
    return {t.nodeid.split("::", 1)[1]: t.outcome for t in result.tests}


def _module(tmp_path: Path, name: str, source: str) -> Path:
    """A candidate directory holding ``stats.py``."""
    path = tmp_path / name / "stats.py"
    path.parent.mkdir(parents=True)
    path.write_text(source, encoding="utf-8")
    return path.parent


def test_unittest_testcases_with_subtests_and_skips(tmp_path: Path) -> None:
    tests = _files(
        tmp_path / "tests",
        {
            "test_stats.py": """
            import sys
            import unittest
            from stats import mean

            class MeanTests(unittest.TestCase):
                @classmethod
                def setUpClass(cls):
                    cls.cases = [([1, 2, 3], 2), ([1, 2], 1.5), ([4], 4)]

                def test_cases(self):
                    for xs, want in self.cases:
                        with self.subTest(xs=xs):
                            self.assertEqual(mean(xs), want)

                def test_empty_raises(self):
                    with self.assertRaises(ZeroDivisionError):
                        mean([])

                @unittest.skipIf(sys.platform == "linux", "not on Linux")
                def test_elsewhere(self):
                    self.assertEqual(mean([0]), 0)

                @unittest.expectedFailure
                def test_known_wrong(self):
                    self.assertEqual(mean([1]), 2)
            """
        },
    )
    reference = _module(tmp_path, "ref", RIGHT)
    results = _score(
        tests, reference, {"right": reference, "wrong": _module(tmp_path, "bad", WRONG)}
    )
    right, wrong = results["right"], results["wrong"]
    assert right.ok, right.error
    assert _outcomes(right) == {
        "MeanTests::test_cases": "passed",
        "MeanTests::test_empty_raises": "passed",
        "MeanTests::test_elsewhere": "not_applicable",
        "MeanTests::test_known_wrong": "not_applicable",
    }
    assert right.signal("pass_rate") == 1.0
    assert _outcomes(wrong)["MeanTests::test_cases"] == "failed"
    cases = next(t for t in wrong.tests if t.nodeid.endswith("test_cases"))
    assert cases.subtests == {"passed": 2, "failed": 1}
    assert wrong.signal("pass_rate") == 0.5
    assert not wrong.integrity.flagged


HYPOTHESIS_SUITE = {
    "test_props.py": """
    from pathlib import Path
    from hypothesis import HealthCheck, given, settings, strategies as st
    from hypothesis.database import DirectoryBasedExampleDatabase
    from stats import mean

    # As a suite run on a busy machine would say: no per-example deadline, no "too slow".
    settings.register_profile("busy", deadline=None, suppress_health_check=list(HealthCheck))
    settings.load_profile("busy")

    whole = st.lists(st.integers(-1000, 1000), min_size=1, max_size=20)

    @given(whole)
    def test_mean_is_between_min_and_max(xs):
        assert min(xs) <= mean(xs) <= max(xs)

    @given(whole)
    def test_mean_times_len_is_sum(xs):
        assert abs(mean(xs) * len(xs) - sum(xs)) < 1e-6

    # A database in the (read-only) tests directory: Hypothesis must cope, not fail.
    @settings(database=DirectoryBasedExampleDatabase(Path(__file__).parent / ".hypothesis"),
              deadline=2000)
    @given(st.integers(1, 100))
    def test_mean_of_repeats(n):
        assert mean([n] * 3) == n
    """
}


def test_hypothesis_runs_in_a_fresh_read_only_workspace_and_finds_the_bug(
    tmp_path: Path,
) -> None:
    tests = _files(tmp_path / "tests", HYPOTHESIS_SUITE)
    reference = _module(tmp_path, "ref", RIGHT)
    wrong = _module(tmp_path, "bad", WRONG)
    results = _score(tests, reference, {"right": reference, "wrong": wrong, "again": wrong})
    assert results["right"].ok, results["right"].error
    assert set(_outcomes(results["right"]).values()) == {"passed"}, [
        (t.nodeid, t.outcome, t.message) for t in results["right"].tests
    ]
    # Each run is fresh: the failing example is found again, not replayed from a database
    # some earlier run left behind.
    for name in ("wrong", "again"):
        assert _outcomes(results[name]) == {
            "test_mean_is_between_min_and_max": "passed",
            "test_mean_times_len_is_sum": "failed",
            "test_mean_of_repeats": "passed",
        }
        failed = next(t for t in results[name].tests if t.outcome == "failed")
        assert "Falsifying example" in results[name].extra["output"] or failed.message
    assert not (tests / ".hypothesis").exists()  # nothing was written next to the suite


ASYNC_SUITE = {
    "conftest.py": """
    import pytest

    @pytest.fixture
    def anyio_backend():
        return "asyncio"

    @pytest.fixture
    async def numbers():
        import anyio
        await anyio.sleep(0)
        return [1, 2, 3, 4]
    """,
    "test_async.py": """
    import anyio
    import pytest
    from stats import mean

    pytestmark = pytest.mark.anyio

    async def test_mean_after_await(numbers):
        await anyio.sleep(0.01)
        assert mean(numbers) == 2.5

    async def test_mean_in_tasks():
        results = []
        async with anyio.create_task_group() as group:
            for i in range(3):
                async def one(i=i):
                    await anyio.sleep(0.01 * (3 - i))
                    results.append(mean([i, i + 1]))
                group.start_soon(one)
        assert results == [2.5, 1.5, 0.5]

    def test_sync_still_works():
        assert mean([2]) == 2
    """,
}


@pytest.mark.parametrize(
    "declared", [False, True], ids=["plugin-given", "plugin-declared-by-conftest"]
)
def test_async_tests_and_fixtures_through_anyio(tmp_path: Path, declared: bool) -> None:
    # Plugins are not autoloaded in a run: the caller names them, or the suite declares them.
    suite = dict(ASYNC_SUITE)
    how: dict[str, Any] = {"plugins": ["anyio.pytest_plugin"]}
    if declared:
        suite["conftest.py"] = 'pytest_plugins = ["anyio.pytest_plugin"]\n' + textwrap.dedent(
            suite["conftest.py"]
        )
        how = {}
    tests = _files(tmp_path / "tests", suite)
    reference = _module(tmp_path, "ref", RIGHT)
    results = _score(
        tests, reference, {"right": reference, "wrong": _module(tmp_path, "bad", WRONG)}, **how
    )
    assert results["right"].ok, results["right"].error
    assert set(_outcomes(results["right"]).values()) == {"passed"}, [
        (t.nodeid, t.outcome, t.message) for t in results["right"].tests
    ]
    assert _outcomes(results["wrong"]) == {
        "test_mean_after_await": "failed",
        "test_mean_in_tasks": "failed",
        "test_sync_still_works": "passed",
    }


def test_the_suites_own_ini_options_apply(tmp_path: Path) -> None:
    tests = _files(
        tmp_path / "tests",
        {
            "test_ini.py": """
            import warnings
            import pytest
            from stats import mean

            def test_mean():
                assert mean([1, 2]) == 1.5

            def test_warning_is_an_error():
                mean([1])
                warnings.warn("deprecated thing", DeprecationWarning)

            @pytest.mark.xfail(reason="was broken")
            def test_fixed_since():
                assert mean([2, 2]) == 2
            """
        },
    )
    reference = _module(tmp_path, "ref", RIGHT)
    ini = {"filterwarnings": "error\nignore:other:UserWarning", "xfail_strict": "true"}
    with Evaluator(tests, reference=reference, ini=ini, reference_baseline=True) as ev:
        result = ev.score(reference)
    records = {t.nodeid.split("::")[-1]: t for t in result.tests}
    assert records["test_mean"].outcome == "passed"
    # Without the suite's ini these would be a pass and an xpass.
    assert records["test_warning_is_an_error"].reference_outcome == "failed"
    assert "DeprecationWarning: deprecated thing" in (
        records["test_warning_is_an_error"].message or ""
    )
    assert records["test_fixed_since"].reference_outcome == "failed"
    assert "[XPASS(strict)]" in (records["test_fixed_since"].message or "")


def test_data_files_next_to_the_tests_and_declared_fixture_plugins(tmp_path: Path) -> None:
    tests = _files(
        tmp_path / "tests",
        {
            "__init__.py": "",
            "conftest.py": """
            import json
            from pathlib import Path
            import pytest

            pytest_plugins = ["tests.fixtures"]

            @pytest.fixture(params=sorted((Path(__file__).parent / "data").glob("*.json")),
                            ids=lambda p: p.stem)
            def case(request):
                return json.loads(request.param.read_text())
            """,
            "fixtures.py": """
            import pytest

            @pytest.fixture(scope="session")
            def tolerance():
                return 1e-9
            """,
            "data/halves.json": '{"xs": [1, 2], "want": 1.5}',
            "data/whole.json": '{"xs": [2, 4, 6], "want": 4}',
            "expected.csv": "1,2,3;2\n5,6;5.5\n",
            "test_data.py": """
            from pathlib import Path
            from stats import mean

            def test_case_files(case, tolerance):
                assert abs(mean(case["xs"]) - case["want"]) <= tolerance

            def test_csv_next_to_the_test():
                text = Path(__file__).with_name("expected.csv").read_text()
                for line in text.split():
                    xs, want = line.split(";")
                    assert mean([int(x) for x in xs.split(",")]) == float(want)
            """,
        },
    )
    reference = _module(tmp_path, "ref", RIGHT)
    results = _score(
        tests, reference, {"right": reference, "wrong": _module(tmp_path, "bad", WRONG)}
    )
    assert results["right"].ok, results["right"].error
    assert _outcomes(results["right"]) == {
        "test_case_files[halves]": "passed",
        "test_case_files[whole]": "passed",
        "test_csv_next_to_the_test": "passed",
    }
    assert _outcomes(results["wrong"]) == {
        "test_case_files[halves]": "failed",
        "test_case_files[whole]": "passed",
        "test_csv_next_to_the_test": "failed",
    }


PACKAGE_SUITE = {
    "test_pkg.py": """
    import subprocess
    import sys
    import mylib
    from mylib.stats import mean

    def test_import_through_the_package():
        assert mylib.mean([1, 2]) == 1.5

    def test_submodule_and_data_file_inside_the_package():
        assert mean([1, 2, 3]) == 2
        assert mylib.default_weights() == [0.5, 0.5]

    def test_a_subprocess_imports_the_candidate_like_an_installed_package():
        done = subprocess.run(
            [sys.executable, "-m", "mylib", "1", "2"], capture_output=True, text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "1.5"
    """
}


def _package(root: Path, mean_source: str) -> Path:
    return _files(
        root,
        {
            "mylib/__init__.py": """
            import json
            from importlib import resources
            from mylib.stats import mean

            def default_weights():
                return json.loads(resources.files("mylib").joinpath("weights.json").read_text())
            """,
            "mylib/stats.py": mean_source,
            "mylib/weights.json": "[0.5, 0.5]",
            "mylib/__main__.py": """
            import sys
            from mylib import mean
            print(mean([float(a) for a in sys.argv[1:]]))
            """,
        },
    )


@pytest.mark.parametrize("layout", ["flat", "src", "package-itself"])
def test_packages_and_src_layouts_as_candidates(tmp_path: Path, layout: str) -> None:
    tests = _files(tmp_path / "tests", PACKAGE_SUITE)

    def candidate(name: str, source: str) -> Path:
        project = tmp_path / name
        if layout == "flat":
            return _package(project, source)
        if layout == "src":
            _package(project / "src", source)
            (project / "README.md").write_text("a project with a src layout\n")
            return project
        return _package(project, source) / "mylib"  # the package directory itself

    reference = candidate("ref", RIGHT)
    results = _score(
        tests, reference, {"right": reference, "wrong": candidate("bad", WRONG)}, module="mylib"
    )
    assert results["right"].ok, results["right"].error
    assert set(_outcomes(results["right"]).values()) == {"passed"}, [
        (t.nodeid, t.outcome, t.message) for t in results["right"].tests
    ]
    assert _outcomes(results["wrong"]) == {
        "test_import_through_the_package": "failed",
        "test_submodule_and_data_file_inside_the_package": "passed",
        "test_a_subprocess_imports_the_candidate_like_an_installed_package": "failed",
    }


def test_tmp_path_subprocesses_and_multiprocessing(tmp_path: Path) -> None:
    tests = _files(
        tmp_path / "tests",
        {
            "test_processes.py": """
            import multiprocessing
            import subprocess
            import sys
            from stats import mean

            def test_tmp_path_is_writable(tmp_path, tmp_path_factory):
                out = tmp_path / "out.txt"
                out.write_text(str(mean([1, 2])))
                assert out.read_text() == "1.5"
                assert tmp_path_factory.mktemp("more").is_dir()

            def test_a_subprocess_of_the_interpreter():
                code = "import stats; print(stats.mean([1, 2]))"
                done = subprocess.run([sys.executable, "-c", code], capture_output=True,
                                      text=True, timeout=60)
                assert done.stdout.strip() == "1.5", done.stderr

            def test_a_shell_command():
                done = subprocess.run(["sh", "-c", "echo $((6 * 7))"], capture_output=True,
                                      text=True, timeout=60)
                assert done.stdout.strip() == "42"

            def test_a_fork_pool():
                with multiprocessing.get_context("fork").Pool(2) as pool:
                    assert pool.map(mean, [[1, 2], [3, 4]]) == [1.5, 3.5]

            def test_a_spawn_process_pool():
                from concurrent.futures import ProcessPoolExecutor
                context = multiprocessing.get_context("spawn")
                with ProcessPoolExecutor(2, mp_context=context) as pool:
                    assert list(pool.map(mean, [[1, 2], [5, 6]])) == [1.5, 5.5]
            """
        },
    )
    reference = _module(tmp_path, "ref", RIGHT)
    results = _score(
        tests,
        reference,
        {"right": reference, "wrong": _module(tmp_path, "bad", WRONG)},
        limits=Limits(timeout_s=60),
    )
    assert results["right"].ok, results["right"].error
    assert set(_outcomes(results["right"]).values()) == {"passed"}, [
        (t.nodeid, t.outcome, t.message) for t in results["right"].tests
    ]
    assert _outcomes(results["wrong"]) == {
        "test_tmp_path_is_writable": "failed",
        "test_a_subprocess_of_the_interpreter": "failed",
        "test_a_shell_command": "passed",
        "test_a_fork_pool": "failed",
        "test_a_spawn_process_pool": "failed",
    }


def test_the_candidates_package_wins_over_a_copy_installed_in_the_environment(
    tmp_path: Path,
) -> None:
    # iniconfig is installed wherever pytest is, and pytest has imported it before any test.
    tests = _files(
        tmp_path / "tests",
        {
            "test_installed.py": """
            import iniconfig
            from iniconfig.extra import answer

            def test_the_candidates_own_code():
                assert answer() == 42
                assert not hasattr(iniconfig, "IniConfig")  # not the installed package
            """
        },
    )

    def candidate(name: str, value: int) -> Path:
        return _files(
            tmp_path / name,
            {
                "iniconfig/__init__.py": "",
                "iniconfig/extra.py": f"def answer():\n    return {value}\n",
            },
        )

    reference = candidate("ref", 42)
    missing = tmp_path / "missing"
    (missing / "other").mkdir(parents=True)
    (missing / "other" / "__init__.py").write_text("")
    with Evaluator(tests, reference=reference, module="iniconfig") as ev:
        right, wrong, absent = (
            ev.score(reference),
            ev.score(candidate("bad", 41)),
            ev.score(missing),
        )
    assert right.ok, right.error
    assert right.signal("pass_rate") == 1.0
    assert wrong.signal("pass_rate") == 0.0
    # A candidate without the package does not get the installed one: it fails to import.
    assert not absent.ok
    assert "No module named 'iniconfig' in the candidate" in (absent.error or "")


def test_a_suite_of_several_packages_collects_without_a_reference(tmp_path: Path) -> None:
    tests = _files(
        tmp_path / "tests",
        {
            "test_two.py": """
            import first
            import second

            def test_both():
                assert first.one() + second.two() == 3
            """
        },
    )
    candidate = _files(
        tmp_path / "cand",
        {"first.py": "def one():\n    return 1\n", "second.py": "def two():\n    return 2\n"},
    )
    with Evaluator(tests, module=["first", "second"]) as ev:
        assert [nodeid for nodeid, _ in ev.expected_visible] == ["tests/test_two.py::test_both"]
        assert ev.score(candidate).signal("pass_rate") == 1.0
