"""``scorewright serve`` (pytest_scorewright/reward_service.py): a real HTTP server on the
loopback, a real client (urllib), the quickstart task scored in real sandboxes. Each test
runs on both servers that can carry the service (the embedded one and uvicorn's): their
answers are the same, status for status and byte for byte."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_scorewright.errors import ConfigError
from pytest_scorewright.reward_service import MAX_BODY, SERVERS, TOKEN_ENV, Server, serve
from tests.conftest import quickstart_tasks, running

pytestmark = pytest.mark.sandbox

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart"
RIGHT = (QUICKSTART / "reference" / "solution.py").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def tasks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return quickstart_tasks(tmp_path_factory.mktemp("tasks"))


def _running(server: Server) -> Iterator[str]:
    yield from running(server)


@pytest.fixture(scope="module", params=SERVERS)
def kind(request: pytest.FixtureRequest) -> str:
    """The server carrying the service."""
    return str(request.param)


@pytest.fixture(scope="module")
def url(tasks: Path, kind: str) -> Iterator[str]:
    yield from _running(serve(str(tasks), "127.0.0.1", 0, server=kind))


def _post(url: str, body: bytes, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    request = urllib.request.Request(url, data=body, method="POST", headers=headers or {})  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=120) as answer:  # noqa: S310 - our server
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def _score(url: str, **body: Any) -> tuple[int, Any]:
    return _post(f"{url}/score", json.dumps(body).encode())


def test_health_lists_the_tasks(url: str) -> None:
    with urllib.request.urlopen(f"{url}/healthz", timeout=10) as answer:  # noqa: S310
        assert json.loads(answer.read()) == {"ok": True, "tasks": ["rle"]}


def test_candidates_get_a_reward_a_verdict_and_no_held_out_text(url: str) -> None:
    status, right = _score(url, task="rle", source=f"```python\n{RIGHT}```")
    assert status == 200
    assert right["reward"] == pytest.approx(1.0)
    assert right["verdict"] == "passed"
    buggy = (QUICKSTART / "solution.py").read_text(encoding="utf-8")
    status, failed = _score(url, task="rle", source=buggy)
    assert status == 200
    assert failed["verdict"] == "failed"
    assert 0.0 < failed["reward"] < 1.0
    assert "negative" not in json.dumps(failed)  # a held-out test's name or message
    status, broken = _score(url, task="rle", source="def encode(:\n")
    assert (status, broken["verdict"]) == (200, "error")


@pytest.mark.parametrize(
    ("body", "status", "says"),
    [
        (b"{not json", 400, "not UTF-8 JSON"),
        (b"\xff\xfe", 400, "not UTF-8 JSON"),
        (b"[1, 2]", 400, "must be a JSON object"),
        (json.dumps({"task": "rle"}).encode(), 400, "needs 'source'"),
        (json.dumps({"task": "../rle", "source": "x"}).encode(), 400, "is not a task name"),
        (json.dumps({"task": "nope", "source": "x"}).encode(), 404, "no task 'nope'"),
        (b"x" * (MAX_BODY + 1), 413, "over"),
        (b"[" * 200_000, 400, "not UTF-8 JSON (RecursionError)"),
        (json.dumps({"task": "rle", "source": "x", "id": "a" * 300}).encode(), 400, "'id'"),
    ],
    ids=[
        "malformed",
        "not-utf8",
        "not-an-object",
        "no-source",
        "path",
        "unknown",
        "huge",
        "nested-deep",
        "long-id",
    ],
)
def test_bad_requests_get_a_status_and_one_line(
    url: str, body: bytes, status: int, says: str
) -> None:
    got, answer = _post(f"{url}/score", body)
    assert got == status
    assert says in answer["error"]
    assert "\n" not in answer["error"]
    # The service is unharmed: the next request is answered.
    with urllib.request.urlopen(f"{url}/healthz", timeout=10) as health:  # noqa: S310
        assert json.loads(health.read())["ok"] is True


def test_a_token_is_required_and_beyond_the_loopback_one_must_be_set(
    tasks: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    with pytest.raises(ConfigError, match=f"beyond the loopback needs a token: set {TOKEN_ENV}"):
        serve(str(tasks), "0.0.0.0", 0, server=kind)  # noqa: S104 - refused, the point
    monkeypatch.setenv(TOKEN_ENV, "s3cret")
    for base in _running(serve(str(tasks), "127.0.0.1", 0, server=kind)):
        body = json.dumps({"task": "rle", "source": RIGHT}).encode()
        assert _post(f"{base}/score", body)[0] == 401
        assert _post(f"{base}/score", body, {"Authorization": "Bearer wrong"})[0] == 401
        status, answer = _post(f"{base}/score", body, {"Authorization": "Bearer s3cret"})
        assert (status, answer["verdict"]) == (200, "passed")


#: Right, but every call of encode first sleeps: a candidate that holds its slot a while.
SLOW = RIGHT + (
    "\nimport time\n_fast = encode\n\n"
    "def encode(text):\n    time.sleep(3)\n    return _fast(text)\n"
)


def _until(server: Server, busy: int, waiting: int) -> None:
    """Wait (a loaded machine may take its time) until the slots hold what the test needs."""
    deadline = time.monotonic() + 60
    while server.service.slots.state() != (busy, waiting):
        assert time.monotonic() < deadline, server.service.slots.state()
        time.sleep(0.02)


def _in_background(base: str, body: bytes, into: list[tuple[int, Any]]) -> threading.Thread:
    worker = threading.Thread(target=lambda: into.append(_post(f"{base}/score", body)))
    worker.start()
    return worker


def test_a_request_beyond_the_slots_is_answered_at_once_with_429(tasks: Path, kind: str) -> None:
    # One slot and no queue: while a slow candidate is being scored, another request is not
    # queued behind it but told to come back.
    server = serve(str(tasks), "127.0.0.1", 0, in_flight=1, queue=0, server=kind)
    for base in _running(server):
        first: list[tuple[int, Any]] = []
        worker = _in_background(base, json.dumps({"task": "rle", "source": SLOW}).encode(), first)
        _until(server, busy=1, waiting=0)  # the slow one holds the slot
        request = urllib.request.Request(  # noqa: S310 - our server
            f"{base}/score",
            data=json.dumps({"task": "rle", "source": RIGHT}).encode(),
            method="POST",
        )
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)  # noqa: S310 - our server
        assert refused.value.code == 429
        assert refused.value.headers["Retry-After"] == "1"
        worker.join(timeout=120)
        assert first[0][0] == 200
        assert _score(base, task="rle", source=RIGHT)[1]["verdict"] == "passed"  # slot freed


def test_requests_beyond_the_slots_wait_their_turn_in_a_bounded_queue(
    tasks: Path, kind: str
) -> None:
    # One slot, a queue of one: the second request waits and is answered, the third is
    # turned away while both are taken.
    server = serve(str(tasks), "127.0.0.1", 0, in_flight=1, queue=1, server=kind)
    for base in _running(server):
        got: list[tuple[int, Any]] = []
        slow = _in_background(base, json.dumps({"task": "rle", "source": SLOW}).encode(), got)
        _until(server, busy=1, waiting=0)
        queued = _in_background(base, json.dumps({"task": "rle", "source": RIGHT}).encode(), got)
        _until(server, busy=1, waiting=1)
        assert _score(base, task="rle", source=RIGHT + "\n# third\n")[0] == 429
        slow.join(timeout=120)
        queued.join(timeout=120)
        assert sorted(status for status, _ in got) == [200, 200]
