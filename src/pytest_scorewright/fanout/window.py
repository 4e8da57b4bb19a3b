"""At most ``window`` pieces of work in flight, results yielded as each finishes."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Executor, Future, wait
from typing import TypeVar

T = TypeVar("T")
P = TypeVar("P")


def bounded(
    executor: Executor,
    work: Callable[[P], T],
    items: Sequence[P],
    window: int,
    failed: Callable[[P, BaseException], T] | None = None,
) -> Iterator[tuple[int, T]]:
    """Run ``work`` over ``items`` with at most ``window`` in flight, yielding ``(index,
    result)`` as each ends; finished futures are dropped at once, so a long run holds no old
    results. With ``failed``, an item whose work raised (or whose worker was lost) yields
    ``failed(item, exception)`` and the others go on; without it, the exception is raised."""
    queue = iter(enumerate(items))

    def submit(item: P) -> Future[T]:
        try:
            return executor.submit(work, item)
        except Exception as exc:  # a broken pool refuses new work
            if failed is None:
                raise
            refused: Future[T] = Future()
            refused.set_exception(exc)
            return refused

    def fill() -> None:
        for index, item in itertools.islice(queue, window - len(pending)):
            pending[submit(item)] = (index, item)

    pending: dict[Future[T], tuple[int, P]] = {}
    fill()
    while pending:
        finished, _ = wait(pending, return_when=FIRST_COMPLETED)
        for future in finished:
            index, item = pending.pop(future)
            error = future.exception()
            if error is None or failed is None:
                yield index, future.result()
            else:
                yield index, failed(item, error)
        fill()
