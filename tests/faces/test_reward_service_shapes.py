"""``scorewright serve`` beyond ``/score``: request ids kept in the store across a SIGKILL and
a restart, the drain on SIGTERM, the trainers' shapes (NeMo Gym's ``/verify``, OpenRLHF's
``/get_reward``, ``/batch_reward``) and ``/metrics``. Real servers (in this process, and
``scorewright serve`` as a process of its own), urllib as the client."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_scorewright.reward_service import SERVERS, serve
from tests.conftest import quickstart_tasks, running

pytestmark = pytest.mark.sandbox

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart"
RIGHT = (QUICKSTART / "reference" / "solution.py").read_text(encoding="utf-8")
BUGGY = (QUICKSTART / "solution.py").read_text(encoding="utf-8")
#: Right, and slow to import: a request of it is under way for a few seconds.
SLOW = RIGHT + "\nimport time\ntime.sleep(4)\n"


@pytest.fixture(scope="module")
def tasks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return quickstart_tasks(tmp_path_factory.mktemp("tasks"))


@pytest.fixture(scope="module", params=SERVERS)
def url(tasks: Path, request: pytest.FixtureRequest) -> Iterator[str]:
    """The service on each server that can carry it (the embedded one, uvicorn's)."""
    yield from running(serve(str(tasks), "127.0.0.1", 0, server=request.param))


def _post(url: str, body: Any, timeout: float = 120) -> tuple[int, Any]:
    data = json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method="POST")  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:  # noqa: S310 - ours
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def _metrics(url: str) -> str:
    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as answer:  # noqa: S310
        assert answer.headers["Content-Type"].startswith("text/plain")
        return str(answer.read().decode())


def test_a_request_id_is_answered_once_and_a_reused_one_is_a_conflict(url: str) -> None:
    first = _post(f"{url}/score", {"task": "rle", "source": BUGGY, "id": "run-1/7"})
    again = _post(f"{url}/score", {"task": "rle", "source": BUGGY, "id": "run-1/7"})
    assert first[0] == again[0] == 200
    assert first[1] == again[1]
    assert "scorewright_stored_answers_total 1" in _metrics(url)
    status, answer = _post(f"{url}/score", {"task": "rle", "source": RIGHT, "id": "run-1/7"})
    assert status == 409
    assert "was used for another task or source" in answer["error"]
    status, answer = _post(f"{url}/score", {"task": "rle", "source": RIGHT, "id": 7})
    assert (status, answer["error"]) == (
        400,
        "'id' must be a printable string of at most 200 characters",
    )


def test_nemo_gyms_verify_shape_gets_its_fields_back_with_a_reward(url: str) -> None:
    # nemo_gym/base_resources_server.py: BaseVerifyRequest in, BaseVerifyResponse out.
    body = {
        "responses_create_params": {"input": [{"role": "user", "content": "Write encode."}]},
        "response": {
            "id": "resp_1",
            "object": "response",
            "output": [
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": f"```python\n{RIGHT}```"}],
                }
            ],
        },
        "task": "rle",
        "row_id": 3,
    }
    status, answer = _post(f"{url}/verify", body)
    assert status == 200
    assert answer["reward"] == pytest.approx(1.0)
    assert {k: answer[k] for k in body} == body
    assert answer["scorewright"]["verdict"] == "passed"
    status, answer = _post(f"{url}/verify", {**body, "response": {"output": []}})
    assert (status, answer["error"]) == (400, "the response has no assistant output_text to score")


def test_openrlhfs_get_reward_shape_scores_each_query_less_its_prompt(url: str) -> None:
    # openrlhf/utils/remote_rm_utils.py: {"query", "prompts", "labels"} in, {"rewards"} out.
    prompt = "Write encode and decode.\n"
    body = {
        "query": [prompt + f"```python\n{RIGHT}```", prompt + BUGGY],
        "prompts": [prompt, prompt],
        "labels": ["rle", "rle"],
    }
    status, answer = _post(f"{url}/get_reward", body)
    assert status == 200
    assert answer["rewards"][0] == pytest.approx(1.0)
    assert 0.0 < answer["rewards"][1] < 1.0
    assert answer["verdicts"] == ["passed", "failed"]
    status, answer = _post(f"{url}/get_reward", {**body, "labels": ["rle"]})
    assert status == 400
    assert "one length" in answer["error"]
    status, answer = _post(f"{url}/get_reward", {**body, "labels": ["rle", "../rle"]})
    assert status == 400


def test_batch_reward_keeps_the_order_and_metrics_count_what_was_served(url: str) -> None:
    items = [{"task": "rle", "source": s} for s in (BUGGY, RIGHT, "def encode(:\n")]
    status, answer = _post(f"{url}/batch_reward", {"items": items})
    assert status == 200
    assert [r["verdict"] for r in answer["results"]] == ["failed", "passed", "error"]
    assert answer["rewards"][1] == pytest.approx(1.0)
    text = _metrics(url)
    assert 'scorewright_requests_total{path="/batch_reward",status="200"}' in text
    assert 'scorewright_scored_total{verdict="passed"}' in text
    assert "scorewright_in_flight 0" in text
    status, answer = _post(f"{url}/batch_reward", {"items": []})
    assert (status, answer["error"]) == (400, "a batch holds 1 to 256 items, not 0")


def _serving(tasks: Path, store: Path, kind: str = "embedded") -> tuple[subprocess.Popen[str], str]:
    """``scorewright serve`` as a process of its own, and its URL."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest_scorewright.cli", "serve", "--tasks", str(tasks),
         "--port", "0", "--store", str(store), "--server", kind],
        stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    assert proc.stderr is not None
    line = proc.stderr.readline()
    assert "serving" in line, line
    return proc, line.split(" on ")[1].split()[0]


def _in_background(url: str, body: Any, into: list[tuple[int, Any]]) -> threading.Thread:
    def ask() -> None:
        try:
            into.append(_post(url, body))
        except OSError as exc:  # the server was killed under it
            into.append((0, str(exc)))

    thread = threading.Thread(target=ask)
    thread.start()
    return thread


@pytest.mark.slow
def test_a_killed_server_scores_its_unfinished_request_again_when_restarted(
    tasks: Path, tmp_path: Path
) -> None:
    store = tmp_path / "serve.sqlite"
    proc, url = _serving(tasks, store)
    got: list[tuple[int, Any]] = []
    body = {"task": "rle", "source": SLOW, "id": "step-12/sample-3"}
    asking = _in_background(f"{url}/score", body, got)
    time.sleep(2.0)  # under way: recorded, not answered
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    asking.join(30)
    assert got[0][0] == 0  # the trainer's request failed with the server
    proc, url = _serving(tasks, store)
    try:
        status, answer = _post(f"{url}/score", body)  # the trainer's retry
        assert status == 200
        assert answer["reward"] == pytest.approx(1.0)
        # Scored once, by the restarted server's recovery; the retry waited for it.
        text = _metrics(url)
        assert 'scorewright_scored_total{verdict="passed"} 1' in text
        assert _post(f"{url}/score", body) == (status, answer)
    finally:
        proc.terminate()
        proc.wait(60)


@pytest.mark.slow
@pytest.mark.parametrize("kind", SERVERS)
def test_sigterm_drains_the_requests_under_way_and_exits(
    tasks: Path, tmp_path: Path, kind: str
) -> None:
    proc, url = _serving(tasks, tmp_path / "serve.sqlite", kind)
    got: list[tuple[int, Any]] = []
    asking = _in_background(f"{url}/score", {"task": "rle", "source": SLOW}, got)
    time.sleep(1.5)
    proc.send_signal(signal.SIGTERM)
    asking.join(60)
    assert proc.wait(60) == 0
    status, answer = got[0]
    assert status == 200
    assert answer["reward"] == pytest.approx(1.0)
    assert proc.stderr is not None
    said = proc.stderr.read()
    assert "draining" in said
    assert "stopped" in said
