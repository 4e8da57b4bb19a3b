"""A scoring pipeline's own process (``python -m pytest_scorewright.workers.pipeline_process``).

Started by :class:`~pytest_scorewright.fanout.pipelines.Pipelines`. It builds an Evaluator
from the caller's settings and adopts what the caller learned (no collection, no reference
run), then scores the candidate paths it is sent, its ``jobs`` at a time, and sends back each
result's JSON. When its requests end (the caller closed it, or died), it closes its Evaluator,
which stops its runs and removes their directories, and exits.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from pytest_scorewright.evaluator import Evaluator
from pytest_scorewright.fanout.pipelines import receive, send
from pytest_scorewright.scoring.assemble import unscored_result


def main() -> int:
    # Ctrl-C at a terminal reaches the whole process group: the caller decides what stops.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # fd 1 carries messages, nothing else
    setup = receive(inp)
    if setup is None:
        return 0
    settings, learned, jobs = setup
    try:
        evaluator = Evaluator.from_settings(settings).adopt(learned)
    except Exception as exc:
        send(out, f"{type(exc).__name__}: {exc}")
        return 1
    send(out, "ready")
    lock = threading.Lock()

    def score(index: int, path: str) -> None:
        try:
            text = evaluator.score(path).to_json()
        except Exception as exc:  # one candidate never stops the others
            text = unscored_result(Path(path), exc, limits=learned.limits).to_json()
        with lock, contextlib.suppress(OSError):  # the caller gone: nothing to answer
            send(out, (index, text))

    with evaluator, ThreadPoolExecutor(jobs, thread_name_prefix="scorewright") as pool:
        while (message := receive(inp)) is not None:
            pool.submit(score, *message)
        # The requests ended: the caller is done, or gone. Nothing waiting starts, and the
        # runs under way end (their threads at once, each with an error nobody reads).
        pool.shutdown(wait=False, cancel_futures=True)
        evaluator.cancel("the caller of this scoring pipeline ended")
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)  # no interpreter teardown while abandoned threads may still hold locks
