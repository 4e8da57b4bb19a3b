"""``scorewright serve --server uvicorn`` (pytest_scorewright/reward_asgi.py): the same
answers as the embedded server, byte for byte (but a scoring's duration), from a real uvicorn
on the loopback; and a clear refusal where uvicorn is not installed. (Every test of
tests/faces/test_reward_service.py and test_reward_service_shapes.py runs on both servers.)"""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_scorewright.errors import ConfigError
from pytest_scorewright.reward_service import MAX_BODY, serve
from tests.conftest import quickstart_tasks, running

pytestmark = pytest.mark.sandbox

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart"
RIGHT = (QUICKSTART / "reference" / "solution.py").read_text(encoding="utf-8")
#: Requests whose answers must not depend on the server: (method, path, body, headers).
ASKED: list[tuple[str, str, bytes | None, dict[str, str]]] = [
    ("GET", "/healthz", None, {}),
    ("GET", "/nowhere", None, {}),
    ("POST", "/nowhere", b"{}", {}),
    ("POST", "/score", b"{not json", {}),
    ("POST", "/score", b"\xff\xfe", {}),
    ("POST", "/score", b"[1]", {}),
    ("POST", "/score", json.dumps({"task": "../rle", "source": "x"}).encode(), {}),
    ("POST", "/score", json.dumps({"task": "nope", "source": "x"}).encode(), {}),
    ("POST", "/score", b"x" * (MAX_BODY + 1), {}),
    ("POST", "/score", json.dumps({"task": "rle", "source": RIGHT, "id": "r-1"}).encode(), {}),
    ("POST", "/score", json.dumps({"task": "rle", "source": "x", "id": "r-1"}).encode(), {}),
    ("POST", "/batch_reward", json.dumps({"items": []}).encode(), {}),
    ("POST", "/get_reward", json.dumps({"query": ["x"]}).encode(), {}),
]


def _ask(url: str, method: str, path: str, body: bytes | None) -> tuple[int, str, bytes]:
    host, port = url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=120)
    try:
        connection.request(method, path, body=body)
        answer = connection.getresponse()
        data = answer.read()
        if b'"duration_s": ' in data:  # the one figure two scorings of a program differ in
            said = json.loads(data)
            said["duration_s"] = 0.0
            data = json.dumps(said).encode()
        return answer.status, str(answer.getheader("Content-Type")), data
    finally:
        connection.close()


def test_both_servers_answer_alike_byte_for_byte(tmp_path: Path) -> None:
    tasks = quickstart_tasks(tmp_path / "tasks")
    answers: dict[str, list[tuple[int, str, bytes]]] = {}
    for kind in ("embedded", "uvicorn"):
        for url in running(serve(str(tasks), "127.0.0.1", 0, server=kind)):
            answers[kind] = [_ask(url, method, path, body) for method, path, body, _ in ASKED]
    assert answers["uvicorn"] == answers["embedded"]
    statuses = [status for status, _, _ in answers["uvicorn"]]
    assert statuses == [200, 404, 404, 400, 400, 400, 400, 404, 413, 200, 409, 400, 400]


def test_without_uvicorn_the_server_is_refused_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tasks = quickstart_tasks(tmp_path / "tasks")
    monkeypatch.setitem(sys.modules, "uvicorn", None)  # what an import finds where it is absent
    with pytest.raises(ConfigError, match=r"pip install 'pytest-scorewright\[asgi\]'"):
        serve(str(tasks), "127.0.0.1", 0, server="uvicorn")
    with pytest.raises(ConfigError, match="no server 'gunicorn'; choose one of embedded"):
        serve(str(tasks), "127.0.0.1", 0, server="gunicorn")


@pytest.mark.slow
def test_the_command_line_refuses_an_unknown_server_in_one_line(tmp_path: Path) -> None:
    tasks = quickstart_tasks(tmp_path / "tasks")
    done = subprocess.run(
        [sys.executable, "-m", "pytest_scorewright.cli", "serve", "--tasks", str(tasks),
         "--server", "gunicorn"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert "invalid choice: 'gunicorn'" in done.stderr
    assert "Traceback" not in done.stderr
