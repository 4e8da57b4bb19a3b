"""Fresh-argument benchmark rounds compared with the reference's on the same arguments.

The benchmark fixture seeds each round's ``setup`` the same way in every run, and sends each
round's print: a digest of its arguments and one of its result, floats rounded to six
significant digits (child/test_process/timed_results.py). A round whose result is not the
reference's on
the same arguments is a wrong answer the clock timed. A few such rounds may be two right
answers that round differently; speed bought with wrong answers needs most rounds to move a
median, so more than :data:`MOST_DIFFERING` of the compared rounds is evidence.
"""

from __future__ import annotations

from collections.abc import Mapping

from pytest_scorewright.integrity.codes import reason
from pytest_scorewright.result import Reason

#: The share of compared rounds that may differ from the reference's before it is evidence.
MOST_DIFFERING = 0.25
#: Rounds compared, at least, for the share to mean something.
FEWEST_COMPARED = 4


def timed_reasons(
    run: str,
    prints: Mapping[str, tuple[str, ...]],
    trusted: Mapping[str, tuple[str, ...]],
) -> list[Reason]:
    """``timed_result_differs`` for each test whose rounds differ from the reference's on
    the same arguments; none where the reference's own results varied on equal arguments."""
    found = []
    for test, theirs in prints.items():
        expected = _by_arguments(trusted.get(test, ()))
        if expected is None:
            continue
        compared = differ = 0
        for given, result in _split(theirs):
            want = expected.get(given)
            if want is not None:
                compared += 1
                differ += want != result
        if compared >= FEWEST_COMPARED and differ > MOST_DIFFERING * compared:
            found.append(
                reason(
                    "timed_result_differs",
                    f"{run} run: {test[:200]}: {differ} of {compared} timed rounds with fresh "
                    "arguments returned something else than the reference on the same arguments",
                )
            )
    return found


def _by_arguments(prints: tuple[str, ...]) -> dict[str, str] | None:
    """The reference's result by arguments; None where it varied on the same arguments."""
    found: dict[str, str] = {}
    for given, result in _split(prints):
        if found.setdefault(given, result) != result:
            return None
    return found


def _split(prints: tuple[str, ...]) -> list[tuple[str, str]]:
    pairs = (p.split(":", 1) for p in prints if p.count(":") == 1)
    return [(given, result) for given, result in pairs]
