"""The layout's own guarantees: names the integrity checks rely on must resolve."""

from __future__ import annotations

import importlib

import pytest

from pytest_scorewright.child import monitor


@pytest.mark.parametrize("watched", monitor.watched(), ids=lambda w: ".".join(p for p in w if p))
def test_every_identity_the_monitor_snapshots_resolves(watched: tuple[str, str, str]) -> None:
    # The monitor names what it watches; a module moved or renamed would silently leave an
    # identity unchecked (the snapshot skips what it cannot find).
    module_name, owner, name = watched
    module = importlib.import_module(module_name)
    holder = getattr(module, owner) if owner else module
    assert name in vars(holder), f"{module_name}.{owner}.{name} does not exist"
