"""verl's ``compute_score`` (pytest_scorewright/verl.py): a sample's code scored on its task's
tests in a sandbox, with a verdict, numbers only, and no 0.0 for a failure of ours."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_scorewright.errors import ConfigError
from tests.conftest import quickstart_tasks

pytestmark = pytest.mark.sandbox

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart"
RIGHT = (QUICKSTART / "reference" / "solution.py").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def tasks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return quickstart_tasks(tmp_path_factory.mktemp("tasks"))


ComputeScore = Callable[..., dict[str, Any]]
HANG = RIGHT.replace("    runs: list", "    while True:\n        pass\n    runs: list")
ALWAYS_EQUAL = (
    "class Yes:\n    def __eq__(self, other):\n        return True\n\n"
    "def encode(text):\n    return Yes()\n\ndef decode(runs):\n    return Yes()\n"
)


@pytest.fixture
def compute_score(tasks: Path, monkeypatch: pytest.MonkeyPatch) -> ComputeScore:
    from pytest_scorewright import verl

    monkeypatch.setenv(verl.TASKS_ENV, str(tasks))
    return verl.compute_score


def test_a_right_completion_passes_with_the_top_score(compute_score: ComputeScore) -> None:
    completion = f"Here is my solution.\n\n```python\n{RIGHT}```\n\nIt runs in O(n)."
    answer = compute_score("rle", completion, None, {"index": 3})
    assert answer["verdict"] == "passed"
    assert answer["score"] == pytest.approx(1.0)
    assert answer["pass_rate"] == 1.0
    assert answer["flagged"] == 0.0


def test_a_held_out_bug_fails_and_names_no_held_out_test(compute_score: ComputeScore) -> None:
    buggy = (QUICKSTART / "solution.py").read_text(encoding="utf-8")
    answer = compute_score("anything", buggy, None, {"scorewright_task": "rle"})
    assert answer["verdict"] == "failed"
    assert 0.0 < answer["score"] < 1.0
    assert answer["heldout_pass_rate"] < 1.0
    shown = json.dumps(answer)
    assert "test_heldout" not in shown
    assert "negative" not in shown  # a held-out test's name or message


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("def encode(:\n", "error"),
        (
            RIGHT.replace("    runs: list", "    while True:\n        pass\n    runs: list"),
            "time_limit",
        ),
        (
            "class Yes:\n    def __eq__(self, other):\n        return True\n\n"
            "def encode(text):\n    return Yes()\n\ndef decode(runs):\n    return Yes()\n",
            "rejected",
        ),
    ],
    ids=["syntax-error", "hang", "always-equal"],
)
def test_each_kind_of_failure_has_its_verdict(
    compute_score: ComputeScore, source: str, expected: str
) -> None:
    answer = compute_score("rle", source)
    assert answer["verdict"] == expected, answer
    assert answer["score"] < 0.5


@pytest.mark.parametrize("task", ["../rle", "rle/../../etc", "", "a b"])
def test_a_task_that_is_not_a_name_is_refused_in_one_line(
    compute_score: ComputeScore, task: str
) -> None:
    with pytest.raises(ConfigError, match=r"is not a task name") as raised:
        compute_score(task, RIGHT)
    assert "\n" not in str(raised.value)


def test_an_unknown_task_is_refused_in_one_line(compute_score: ComputeScore) -> None:
    with pytest.raises(ConfigError, match=r"^no task 'missing': .* is not a directory$"):
        compute_score("missing", RIGHT)


def test_through_the_service_url_and_awaited_as_slime_does(
    tasks: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio
    import threading
    from types import SimpleNamespace

    from pytest_scorewright import verl
    from pytest_scorewright.reward_service import serve

    server = serve(str(tasks), "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.delenv(verl.TASKS_ENV, raising=False)  # the service's tasks, not ours
        monkeypatch.setenv(verl.SERVICE_ENV, f"http://127.0.0.1:{server.server_address[1]}")
        answer = verl.compute_score("rle", f"```python\n{RIGHT}```")
        assert answer["score"] == pytest.approx(1.0)
        assert answer["verdict"] == "passed"
        with pytest.raises(ConfigError, match=r"the reward service refused the sample: .*no task"):
            verl.compute_score("nope", RIGHT)
        sample = SimpleNamespace(response=RIGHT, label="rle", metadata={})
        assert asyncio.run(verl.slime_reward(None, sample)) == pytest.approx(1.0)
        awaited = asyncio.run(verl.async_compute_score("rle", RIGHT))
        assert awaited["verdict"] == "passed"
    finally:
        server.shutdown()
        server.server_close()


def test_a_service_that_cannot_be_reached_is_an_error_of_ours_not_a_zero(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import socket

    from pytest_scorewright import verl
    from pytest_scorewright.errors import InfrastructureError

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: nothing listens there
    monkeypatch.setenv(verl.SERVICE_ENV, f"http://127.0.0.1:{port}")
    with pytest.raises(InfrastructureError, match=r"the reward service at .* failed"):
        verl.compute_score("rle", RIGHT)
