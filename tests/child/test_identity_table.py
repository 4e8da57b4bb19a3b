"""The monitor's identity checks, a namespace at a time (child/shared/identity_table.py): for
any namespaces and any changes to them, exactly the names a one-by-one ``is`` comparison
finds changed; and the keys remembered in the warm parent are found again where pytest's
modules changed since."""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_scorewright.child.shared import identity_table
from pytest_scorewright.child.shared import monitor as monitor_module

NAMES = st.sampled_from([f"n{i}" for i in range(12)])
#: What a name is changed to: an equal but distinct object, the same object, None, or gone.
CHANGE = st.sampled_from(["equal_copy", "same", "none", "delete", "new"])


@settings(max_examples=300, deadline=None)
@given(
    spaces=st.lists(
        st.dictionaries(NAMES, st.integers(-3, 3), min_size=1, max_size=8),
        min_size=1,
        max_size=4,
    ),
    changes=st.lists(st.tuples(st.integers(0, 3), NAMES, CHANGE), max_size=12),
    gone=st.sets(st.integers(0, 3)),
)
def test_changed_is_exactly_what_is_compares(
    spaces: list[dict[str, int]], changes: list[tuple[int, str, str]], gone: set[int]
) -> None:
    # Boxed values: small ints are cached, and a copy must be a distinct object.
    namespaces: list[dict[str, Any]] = [{k: [v] for k, v in s.items()} for s in spaces]
    keys = tuple((f"m{i}", "", name) for i, ns in enumerate(namespaces) for name in ns)
    keys += (("m0", "", "never_bound"),)  # a key whose name is absent is left out
    by_module = {f"m{i}": ns for i, ns in enumerate(namespaces)}
    groups = identity_table.Layout(keys).snapshot(lambda key: by_module.get(key[0]))
    before = {key: by_module[key[0]][key[2]] for key in keys if key[2] in by_module[key[0]]}
    assert {k for _, g in groups for k in g.keys} == set(before)
    for index, name, how in changes:
        ns = namespaces[index % len(namespaces)]
        if how == "delete":
            ns.pop(name, None)
        elif how == "none":
            ns[name] = None
        elif how == "equal_copy" and name in ns and ns[name] is not None:
            ns[name] = list(ns[name])
        elif how == "new":
            ns[name] = ["new"]
    live = {m: (None if int(m[1:]) in gone else ns) for m, ns in by_module.items()}
    found = {key for _, group in groups for key in group.changed(live[group.keys[0][0]])}
    expected = {
        key for key, value in before.items() if (live[key[0]] or {}).get(key[2]) is not value
    }
    assert found == expected


def test_one_name_and_a_class_namespace() -> None:
    class Owner:
        def method(self) -> None: ...

    keys = (("mod", "Owner", "method"),)
    ((namespace, group),) = identity_table.Layout(keys).snapshot(lambda key: vars(Owner))
    assert list(group.changed(namespace)) == []
    Owner.method = lambda self: None  # type: ignore[method-assign]
    assert list(group.changed(vars(Owner))) == [("mod", "Owner", "method")]


def test_stdlib_by_module() -> None:
    import math

    held = {("math", "sqrt"): math.sqrt, ("math", "floor"): math.floor, ("json", "dumps"): 1}
    groups = dict(identity_table.by_module(held))
    assert list(groups["math"].changed(vars(math))) == []
    assert list(groups["json"].changed(None)) == [("json", "", "dumps")]


def test_remembered_keys_are_found_again_when_pytest_changed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import _pytest.outcomes
    import _pytest.runner

    monitor_module.remember_identities()
    remembered = monitor_module.outcome_identities()
    assert remembered is monitor_module._remembered[1].keys  # type: ignore[index]
    assert ("_pytest.runner", "CallInfo", "from_call") in remembered

    def late() -> None: ...

    monkeypatch.setattr(_pytest.outcomes, "late_name", late, raising=False)
    assert ("_pytest.outcomes", "", "late_name") in monitor_module.outcome_identities()
    monkeypatch.undo()
    # A module put in another's place in sys.modules: found again, not taken from before.
    fake = types.ModuleType("_pytest.runner")
    fake.CallInfo = late  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "_pytest.runner", fake)
    found = monitor_module.outcome_identities()
    assert ("_pytest.runner", "", "CallInfo") in found
    assert ("_pytest.runner", "CallInfo", "from_call") not in found
    assert sys.modules["_pytest.runner"] is fake
