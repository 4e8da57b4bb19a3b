"""Identities of many attributes, compared a namespace at a time (runs in every child process
the monitor is armed in: the test process and the candidate's).

The monitor compares ~1,400 attributes of pytest's outcome modules and ~700 of the standard
library's at the end of every test, in both processes of a run, and snapshots them twice per
process. One ``dict.get`` and ``is`` per attribute in Python cost ~0.15 ms a check and ~0.9 ms
a snapshot; here each namespace's attributes are fetched by one ``operator.itemgetter`` and
compared by ``map(operator.is_not, ...)``, both in C, and only a namespace that changed is
looked at name by name.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator, Mapping
from typing import Any

#: (module, class or "", attribute).
Key = tuple[str, str, str]


class Group:
    """The watched names of one namespace and what each held at the snapshot."""

    __slots__ = ("_get", "befores", "keys", "names")

    def __init__(self, keys: tuple[Key, ...], befores: tuple[object, ...]) -> None:
        self.keys = keys
        self.names = tuple(key[2] for key in keys)
        self.befores = befores
        self._get = _getter(self.names)

    def changed(self, namespace: Mapping[str, Any] | None) -> Iterator[Key]:
        """The keys whose attribute in ``namespace`` (None: gone) is not what it was."""
        if namespace is None:
            now: tuple[object, ...] = (None,) * len(self.names)
        else:
            try:
                now = self._get(namespace)
            except KeyError:  # a name was deleted: look at each
                now = tuple(namespace.get(name) for name in self.names)
        if any(map(operator.is_not, now, self.befores)):
            yield from (
                key
                for key, before, value in zip(self.keys, self.befores, now, strict=True)
                if value is not before
            )


def _getter(names: tuple[str, ...]) -> Callable[[Mapping[str, Any]], tuple[object, ...]]:
    """A function that fetches ``names`` from a mapping as a tuple (itemgetter returns a bare
    value for one name)."""
    get = operator.itemgetter(*names)
    if len(names) == 1:
        return lambda namespace: (get(namespace),)
    return get


def grouped(
    keys: tuple[Key, ...], namespace_of: Callable[[Key], Mapping[str, Any] | None]
) -> tuple[tuple[Mapping[str, Any], Group], ...]:
    """Each live namespace of ``keys`` (``namespace_of`` finds it: a module's dict, a class's)
    with a :class:`Group` of the keys bound there, each with what it holds now; keys whose
    namespace is gone or whose attribute is None are left out, as the monitor always did."""
    by_owner: dict[tuple[str, str], list[Key]] = {}
    for key in keys:
        by_owner.setdefault((key[0], key[1]), []).append(key)
    groups = []
    for found in by_owner.values():
        namespace = namespace_of(found[0])
        if namespace is None:
            continue
        held = [(key, value) for key in found if (value := namespace.get(key[2])) is not None]
        if held:
            ks, values = zip(*held, strict=True)
            groups.append((namespace, Group(ks, values)))
    return tuple(groups)


def by_module(held: Mapping[tuple[str, str], object]) -> tuple[tuple[str, Group], ...]:
    """(module, attribute) -> what it held, as a :class:`Group` per module name."""
    found: dict[str, list[Key]] = {}
    for module, attr in held:
        found.setdefault(module, []).append((module, "", attr))
    return tuple(
        (module, Group(tuple(keys), tuple(held[module, key[2]] for key in keys)))
        for module, keys in found.items()
    )
