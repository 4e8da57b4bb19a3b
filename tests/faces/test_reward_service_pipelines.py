"""``scorewright serve`` scoring in pipeline processes (reward_scoring.PipelineScoring,
fanout/pipeline_stream.py): past what one process keeps fed, the server relays requests to
pipeline processes of its own. The answers are those of scoring in the server's process,
and a pipeline SIGKILLed mid-request loses no request."""

from __future__ import annotations

import json
import os
import signal
import threading
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from pytest_scorewright.reward_scoring import PipelineScoring
from pytest_scorewright.reward_service import serve
from tests.conftest import quickstart_tasks, running

pytestmark = pytest.mark.sandbox

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart"
RIGHT = (QUICKSTART / "reference" / "solution.py").read_text(encoding="utf-8")
BUGGY = (QUICKSTART / "solution.py").read_text(encoding="utf-8")
SOURCES = {"right": RIGHT, "buggy": BUGGY, "broken": "def encode(:\n", "again": RIGHT}
#: New content that takes a while at import: in the pipelines' hands when one is killed.
SLOW = "\nimport time\ntime.sleep(1.5)\n"


def _score(url: str, source: str) -> dict[str, Any]:
    body = json.dumps({"task": "rle", "source": source}).encode()
    request = urllib.request.Request(f"{url}/score", data=body, method="POST")  # noqa: S310
    with urllib.request.urlopen(request, timeout=300) as answer:  # noqa: S310 - our server
        found: dict[str, Any] = json.loads(answer.read())
    found.pop("duration_s", None)  # the only number that differs between two runs
    return found


def _all_at_once(
    url: str, kill: list[int] | None = None, tag: str = ""
) -> dict[str, dict[str, Any]]:
    answers: dict[str, dict[str, Any]] = {}

    def one(name: str) -> None:
        answers[name] = _score(url, SOURCES[name] + tag)  # a tag: new content, not cached

    threads = [threading.Thread(target=one, args=(name,)) for name in SOURCES]
    for thread in threads:
        thread.start()
    if kill:
        threading.Event().wait(0.5)  # the requests are in the pipelines' hands
        os.kill(kill[0], signal.SIGKILL)
    for thread in threads:
        thread.join(timeout=300)
    return answers


def test_the_service_scores_in_pipelines_as_in_its_own_process_and_loses_nothing(
    tmp_path: Path,
) -> None:
    tasks = quickstart_tasks(tmp_path)
    in_process = serve(str(tasks), "127.0.0.1", 0, in_flight=2, pipelines=False)
    assert in_process.service.elsewhere is None
    for url in running(in_process):
        expected = {name: _score(url, source) for name, source in SOURCES.items()}
        slow = {name: _score(url, source + SLOW) for name, source in SOURCES.items()}
    assert expected["right"]["reward"] == pytest.approx(1.0)
    assert expected["broken"]["verdict"] == "error"

    # Past four at once the service relays to pipelines by default (two here: 3 + 2).
    server = serve(str(tasks), "127.0.0.1", 0, in_flight=5)
    scoring = server.service.elsewhere
    assert isinstance(scoring, PipelineScoring)
    assert scoring.sizes == [3, 2]
    for url in running(server):
        assert _all_at_once(url) == expected
        pids = scoring.scorer(server.service.tasks, "rle").pids
        assert len(pids) == 2
        # A pipeline killed with candidates in hand: they go again on its replacement.
        assert _all_at_once(url, kill=pids, tag=SLOW) == slow
        stream = scoring.scorer(server.service.tasks, "rle")
        assert stream.given_again >= 1  # the kill found candidates in hand
        assert pids[0] not in stream.pids
        assert len(stream.pids) == 2
    # Closing the server stops every pipeline process.
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
