"""The monitor's answer at the end of a test says whether it was disabled; its own code in one
thread must never read as that in another. A real fork arms a monitor (an audit hook cannot be
removed, so never in this process), threads raise events while the main thread answers, and
the answers are read from a real pipe."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_scorewright.child.shared import monitor as monitor_module
from pytest_scorewright.protocol import wire
from pytest_scorewright.protocol.channel import decode_frame
from tests.forked import in_a_fork

pytestmark = pytest.mark.slow  # forks

ANSWERS = 300


def _answers(tmp_path: Path, how: str) -> list[dict[str, Any]]:
    """The canary answers of a forked child that answers :data:`ANSWERS` times while another
    thread raises audit events the monitor handles; ``how`` says what the child does besides."""

    def child(written: int) -> int:
        sys.setswitchinterval(1e-6)  # threads take turns as often as they can
        armed = monitor_module.arm(written, str(tmp_path / "candidate"), str(tmp_path), ())
        stop, started = threading.Event(), threading.Event()

        def events() -> None:
            started.set()
            while not stop.is_set():
                with open(os.devnull, "rb"):  # an "open" event, the clock's kind
                    pass
                for _ in range(20):
                    sys._getframe()  # events without a system call between them

        thread = threading.Thread(target=events)
        thread.start()
        started.wait()
        if how == "disabled":
            armed.busy = True
        for n in range(ANSWERS):
            sys.audit(monitor_module.CANARY_EVENT, f"t::x[{n}]")
        stop.set()
        thread.join()
        return 0

    code, data = in_a_fork(child)
    assert code == 0
    messages, at = [], 0
    while at < len(data):
        length = int.from_bytes(data[at : at + 4], "big")
        messages.append(decode_frame(data[at + 4 : at + 4 + length]))
        at += 4 + length
    return [m for m in messages if m["type"] == wire.CANARY]


def test_another_threads_events_never_read_as_a_disabled_monitor(tmp_path: Path) -> None:
    # A flag shared by all threads, set and restored by the answer while the clock's thread
    # was inside the hook, stayed set: a right program read as rejected (monitor_silenced)
    # from that test on, once in a whole-suite run under load. (A race: in its runs here
    # this check did not catch the shared flag; it holds the guard per thread to it.)
    started = time.monotonic()
    answers = _answers(tmp_path, "plain")
    assert len(answers) == ANSWERS
    assert [a for a in answers if a["busy"]] == []
    assert time.monotonic() - started < 60


def test_a_monitor_disabled_from_plain_python_says_so(tmp_path: Path) -> None:
    answers = _answers(tmp_path, "disabled")
    assert len(answers) == ANSWERS
    assert all(a["busy"] for a in answers)
