"""The reward service's bookkeeping, in the server's process whichever server carries the
requests: who is scored now and who waits (:class:`Admission`), and the counters
``GET /metrics`` shows (:class:`Metrics`)."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any


def default_queue(in_flight: int) -> int:
    """Requests that wait their turn by default: a trainer's batch of concurrent requests
    (32 clients at once queued rather than turned away: a retry loop starves some of them)."""
    return max(64, 4 * in_flight)


class Admission:
    """``slots`` candidates scored at once; up to ``queue`` more wait their turn, first come
    first served (a retry loop against a bare semaphore starved some clients for minutes:
    p99 114 s against p50 0.35 s in benchmarks/serve_load.py); beyond them, turned away."""

    def __init__(self, slots: int, queue: int) -> None:
        self._slots, self._queue = slots, queue
        self._cond = threading.Condition()
        self._busy = 0
        self._next = self._served = 0  # tickets given out, and the next one served

    def acquire(self, *, wait: bool) -> bool:
        """A slot now or, with ``wait`` or room in the queue, in turn; False: turned away."""
        with self._cond:
            waiting = self._next - self._served
            if not wait and self._busy >= self._slots and waiting >= self._queue:
                return False
            ticket = self._next
            self._next += 1
            while ticket != self._served or self._busy >= self._slots:
                self._cond.wait()
            self._served += 1
            self._busy += 1
            self._cond.notify_all()
            return True

    def capacity(self) -> int:
        """Requests it holds at most: those scored and those waiting."""
        return self._slots + self._queue

    def state(self) -> tuple[int, int]:
        """Candidates being scored, and requests waiting their turn, now."""
        with self._cond:
            return self._busy, self._next - self._served

    def release(self) -> None:
        with self._cond:
            self._busy -= 1
            self._cond.notify_all()


class Metrics:
    """Counters in Prometheus's text format (``GET /metrics``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()
        self._seconds = 0.0
        self._in_flight = 0

    def count(self, name: str, **labels: str) -> None:
        shown = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
        with self._lock:
            self._counts[f"{name}{{{shown}}}" if shown else name] += 1

    def timed(self, score: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        with self._lock:
            self._in_flight += 1
        started = time.monotonic()
        try:
            answer = score()
        finally:
            with self._lock:
                self._in_flight -= 1
                self._seconds += time.monotonic() - started
        self.count("scorewright_scored_total", verdict=str(answer.get("verdict")))
        return answer

    def text(self) -> str:
        with self._lock:
            counts, seconds, in_flight = dict(self._counts), self._seconds, self._in_flight
        scored = sum(n for k, n in counts.items() if k.startswith("scorewright_scored_total"))
        lines = [
            "# TYPE scorewright_requests_total counter",
            "# TYPE scorewright_scored_total counter",
            "# TYPE scorewright_stored_answers_total counter",
            *(f"{key} {n}" for key, n in sorted(counts.items())),
            "# TYPE scorewright_scoring_seconds summary",
            f"scorewright_scoring_seconds_sum {seconds:.6f}",
            f"scorewright_scoring_seconds_count {scored}",
            "# TYPE scorewright_in_flight gauge",
            f"scorewright_in_flight {in_flight}",
        ]
        return "\n".join(lines) + "\n"
