"""A task's reference times are kept between preparations, so that its limits do not change
from one preparation to the next (scoring/kept_times.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_scorewright.evaluator import Evaluator
from pytest_scorewright.scoring import kept_times

SUITE = (
    "import time\nfrom solution import work\n\n"
    "def test_quick():\n    assert work(1) == 2\n\n"
    "def test_slower_than_the_floor():\n    time.sleep(0.15)\n    assert work(2) == 4\n"
)


def _task(tmp_path: Path) -> tuple[Path, Path]:
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_work.py").write_text(SUITE, encoding="utf-8")
    reference = tmp_path / "reference.py"
    reference.write_text("def work(x):\n    return 2 * x\n", encoding="utf-8")
    return tests, reference


def _own_limits(tests: Path, reference: Path) -> dict[str, list[float]]:
    with Evaluator(tests, reference=reference) as ev:
        result = ev.score(reference)
    assert result.ok, result.error
    assert result.limits is not None
    own: dict[str, dict[str, list[float]]] = result.limits["per_test"]["own"]
    return own.get("visible", {})


def _kept_files(where: Path) -> list[Path]:
    return sorted(where.glob("*.json"))


@pytest.mark.slow
def test_a_tasks_second_preparation_sets_its_limits_by_the_first_ones_times(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    where = tmp_path / "kept"
    monkeypatch.setenv(kept_times.ENV, str(where))
    tests, reference = _task(tmp_path)
    first = _own_limits(tests, reference)
    slower = "tests/test_work.py::test_slower_than_the_floor"
    assert first[slower][0] == 2.0  # 0.15 s with the reference: ten times, rounded up
    [kept] = _kept_files(where)
    assert (where.stat().st_mode & 0o777, kept.stat().st_mode & 0o777) == (0o700, 0o600)
    text = kept.read_text(encoding="utf-8")
    assert "test_slower" not in text
    assert "test_work" not in text
    # What the first preparation measured is what the next one goes by, whatever it
    # measures itself: a kept time of 0.35 s gives 5 s, where 0.15 s gave 2.
    times = json.loads(text)
    times = {k: [0.35 if v[0] > 0.1 else v[0], v[1]] for k, v in times.items()}
    kept.write_text(json.dumps(times), encoding="utf-8")
    assert _own_limits(tests, reference)[slower][0] == 5.0
    assert _own_limits(tests, reference)[slower][0] == 5.0
    # A kept time far below what the test now takes (another machine's, a faster day's) is
    # not trusted: the new time is kept instead.
    times = {k: [0.001 if v[0] > 0.1 else v[0], v[1]] for k, v in times.items()}
    kept.write_text(json.dumps(times), encoding="utf-8")
    assert _own_limits(tests, reference)[slower][0] == 2.0
    assert max(v[0] for v in json.loads(kept.read_text(encoding="utf-8")).values()) > 0.1
    # Another task (one byte of its suite changed) keeps times of its own; bytecode pytest
    # leaves beside the suite does not make it another task.
    (tests / "__pycache__").mkdir(exist_ok=True)
    (tests / "__pycache__" / "stale.pyc").write_bytes(b"\0")
    _own_limits(tests, reference)
    assert len(_kept_files(where)) == 1
    (tests / "test_work.py").write_text(SUITE + "\n", encoding="utf-8")
    _own_limits(tests, reference)
    assert len(_kept_files(where)) == 2


@pytest.mark.slow
def test_off_keeps_nothing_and_an_unwritable_place_measures_afresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tests, reference = _task(tmp_path)
    monkeypatch.setenv(kept_times.ENV, "off")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert _own_limits(tests, reference)
    assert not (tmp_path / "cache").exists()
    blocked = tmp_path / "a-file"
    blocked.write_text("", encoding="utf-8")
    monkeypatch.setenv(kept_times.ENV, str(blocked / "kept"))  # cannot be made
    assert _own_limits(tests, reference)["tests/test_work.py::test_slower_than_the_floor"]


def test_the_default_place_is_the_users_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(kept_times.ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert kept_times.directory() == tmp_path / "scorewright" / "times"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert kept_times.directory() == Path.home() / ".cache" / "scorewright" / "times"
    # A uid with no HOME and no passwd entry: test_sandbox_modes.py scores as one.


TIMES = st.dictionaries(
    st.tuples(st.sampled_from(["visible", "held-out"]), st.text(min_size=1, max_size=20)),
    st.tuples(st.none() | st.floats(0, 100, allow_nan=False), st.none() | st.floats(0, 100)),
    max_size=8,
)


@settings(max_examples=60, deadline=None)
@given(first=TIMES, factor=st.floats(0.1, 10))
def test_kept_times_are_what_was_measured_first_unless_now_much_slower(
    tmp_path_factory: pytest.TempPathFactory, first: kept_times.Times, factor: float
) -> None:
    where = tmp_path_factory.mktemp("kept")
    os.environ[kept_times.ENV] = str(where)
    try:
        assert kept_times.kept("k", first) == dict(first)
        later = {
            t: (None if w is None else w * factor, None if c is None else c * factor)
            for t, (w, c) in first.items()
        }
        again = kept_times.kept("k", later)
    finally:
        os.environ[kept_times.ENV] = "off"
    assert set(again) == set(later)
    for test, (wall, cpu) in first.items():
        now = later[test]
        slower = any(
            n is not None and b is not None and n > kept_times.REMEASURE_RATIO * max(b, 0.01)
            for n, b in zip(now, (wall, cpu), strict=True)
        )
        assert again[test] == (now if slower else (wall, cpu))


@pytest.mark.parametrize(
    "content",
    ["not json", "[1, 2]", '{"a": [1]}', '{"a": ["x", 1]}', '{"a": [-1, 1]}', "{}" + " " * 9],
)
def test_a_kept_file_that_is_not_ours_is_measured_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: str
) -> None:
    monkeypatch.setenv(kept_times.ENV, str(tmp_path))
    (tmp_path / "k.json").write_text(content, encoding="utf-8")
    measured = {("visible", "t::a"): (0.5, 0.4)}
    assert kept_times.kept("k", measured) == measured
    assert kept_times.kept("k", {("visible", "t::a"): (0.6, 0.5)}) == measured


def test_a_kept_file_of_another_uid_is_not_believed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if os.getuid() != 0:
        pytest.skip("making a file of another uid needs root")
    monkeypatch.setenv(kept_times.ENV, str(tmp_path))
    key = {("visible", "t::a"): (0.5, 0.4)}
    kept_times.kept("k", key)
    os.chown(tmp_path / "k.json", 12345, 12345)
    assert kept_times.kept("k", {("visible", "t::a"): (0.7, 0.6)}) == {
        ("visible", "t::a"): (0.7, 0.6)
    }
