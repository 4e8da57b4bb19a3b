"""At most ``window`` pieces of work in flight, results yielded as each finishes."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Executor, Future, wait
from typing import TypeVar

T = TypeVar("T")
P = TypeVar("P")


def bounded(
    executor: Executor, work: Callable[[P], T], items: Sequence[P], window: int
) -> Iterator[tuple[int, T]]:
    """Run ``work`` over ``items`` with at most ``window`` in flight, yielding ``(index,
    result)`` as each ends; finished futures are dropped at once, so a long run holds no old
    results."""
    queue = iter(enumerate(items))
    pending: dict[Future[T], int] = {}

    def fill() -> None:
        for index, item in itertools.islice(queue, window - len(pending)):
            pending[executor.submit(work, item)] = index

    fill()
    while pending:
        finished, _ = wait(pending, return_when=FIRST_COMPLETED)
        for future in finished:
            yield pending.pop(future), future.result()
        fill()
