"""Hook specifications pytest-scorewright adds to pytest (added in ``pytest_addhooks``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_scorewright.result import ScoreResult


@pytest.hookspec(firstresult=True)
def pytest_scorewright_heldout(item: pytest.Item) -> bool | None:
    """Decide whether ``item`` is a held-out test; return None to let the next hook decide.

    Called once per collected item, after collection (and deselection) has finished. The
    default implementation, which runs last, answers whether the item carries the
    ``heldout`` marker (on the test, its class or its module).
    """


@pytest.hookspec
def pytest_scorewright_result(result: ScoreResult, config: pytest.Config) -> None:
    """Called with the finished ScoreResult just before it is written; for observers.

    Runs only in the process that writes the result (never on an xdist worker).
    """
