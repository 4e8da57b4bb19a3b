"""``scorewright serve`` called by a trainer's own client code, not by ours: OpenRLHF
0.11.2's reward client (``SingleTurnAgentExecutor._fetch_rewards_via_http`` in
``openrlhf/utils/agent.py``, the code its vLLM rollout actors run against
``--remote_rm_url``), taken from the released wheel and run unchanged in a process of its
own against a real service.

The wheel is downloaded from PyPI once (``benchmarks/.cache/clients/``; the test skips,
saying why, where it cannot be). OpenRLHF itself needs torch, DeepSpeed and vLLM (gigabytes);
its client needs only aiohttp. So the two files the client is made of (``agent.py`` and
``logging_utils.py``) are unpacked under empty ``openrlhf/__init__.py`` and
``openrlhf/utils/__init__.py`` (the real ones import torch): the client's code is the
release's, byte for byte. NeMo Gym publishes no package (its ``/verify`` shape is posted
by tests/faces/test_reward_service_shapes.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from pytest_scorewright.reward_service import serve
from tests.conftest import quickstart_tasks, running

pytestmark = pytest.mark.sandbox

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / "benchmarks" / ".cache" / "clients"
OPENRLHF = "openrlhf==0.11.2"
QUICKSTART = ROOT / "examples" / "quickstart"
RIGHT = (QUICKSTART / "reference" / "solution.py").read_text(encoding="utf-8")
BUGGY = (QUICKSTART / "solution.py").read_text(encoding="utf-8")

#: Run in a process of its own: OpenRLHF's client, as its rollout actor calls it.
CLIENT = """
import asyncio, json, sys
from openrlhf.utils.agent import SingleTurnAgentExecutor

url, queries, prompts, labels = json.loads(sys.stdin.read())
executor = SingleTurnAgentExecutor(url)
print(json.dumps(asyncio.run(executor._fetch_rewards_via_http(queries, prompts, labels))))
"""


def _openrlhf_client(into: Path) -> Path:
    """The release's client files under package shims at ``into``; skips where the wheel
    cannot be had."""
    pytest.importorskip("aiohttp", reason="OpenRLHF's client needs aiohttp (the dev extra)")
    wheels = sorted(CACHE.glob("openrlhf-0.11.2-*.whl"))
    if not wheels:
        CACHE.mkdir(parents=True, exist_ok=True)
        fetch = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:"]
        done = subprocess.run(
            [*fetch, OPENRLHF, "-d", str(CACHE)],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        wheels = sorted(CACHE.glob("openrlhf-0.11.2-*.whl"))
        if done.returncode != 0 or not wheels:
            pytest.skip(
                f"{OPENRLHF} could not be downloaded from PyPI (pip exit {done.returncode})"
            )
    utils = into / "openrlhf" / "utils"
    utils.mkdir(parents=True)
    with zipfile.ZipFile(wheels[0]) as wheel:
        for name in ("agent.py", "logging_utils.py"):
            member = f"openrlhf-0.11.2.data/purelib/openrlhf/utils/{name}"
            (utils / name).write_bytes(wheel.read(member))
    (into / "openrlhf" / "__init__.py").write_text("")
    (utils / "__init__.py").write_text("")
    return into


def _ask(
    client: Path, url: str, queries: list[str], prompts: list[str], labels: list[str]
) -> list[dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, "-c", CLIENT],
        input=json.dumps([url, queries, prompts, labels]),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "PYTHONPATH": str(client)},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    answers: list[dict[str, Any]] = json.loads(done.stdout)
    return answers


def test_openrlhfs_own_reward_client_gets_rewards_from_the_service(tmp_path: Path) -> None:
    client = _openrlhf_client(tmp_path / "client")
    prompt = "Write run-length encoding in Python.\n"
    queries = [
        f"{prompt}Here it is:\n```python\n{RIGHT}```",
        f"{prompt}```python\n{BUGGY}```",
        f"{prompt}I cannot do that.",
    ]
    for url in running(serve(str(quickstart_tasks(tmp_path / "tasks")), "127.0.0.1", 0)):
        (answer,) = _ask(client, f"{url}/get_reward", queries, [prompt] * 3, ["rle"] * 3)
        rewards = answer["rewards"]
        assert rewards[0] == pytest.approx(1.0)
        assert 0.0 < rewards[1] < 1.0  # the buggy program: held-out tests fail
        assert rewards[2] == 0.0  # no program at all
        assert answer["scores"] == rewards  # what the client reads first
        assert answer["verdicts"] == ["passed", "failed", "error"]
        assert "negative" not in json.dumps(answer)  # no held-out test's name or message
