"""Identities of many attributes, compared a namespace at a time (runs in every child process
the monitor is armed in: the test process and the candidate's).

The monitor compares ~1,440 attributes of pytest's outcome modules and ~450 of the standard
library's at the end of every test, in both processes of a run, and snapshots them up to twice
per process. Here each namespace's attributes are fetched by one ``operator.itemgetter`` and
compared by ``map(operator.is_not, ...)``, both in C, and only a namespace that changed is
looked at name by name. Measured with pytest imported: a check 0.15 -> 0.12 ms (the ~110
namespaces' own overhead is most of what is left), a snapshot ~0.9 -> 0.26 ms with the
:class:`Layout` found once in the warm parent (arming a monitor 1.6 -> 0.5 ms).
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Iterator, Mapping
from typing import Any

#: (module, class or "", attribute).
Key = tuple[str, str, str]


class Group:
    """The watched names of one namespace and what each held at the snapshot."""

    __slots__ = ("_get", "befores", "keys", "names")

    def __init__(
        self,
        keys: tuple[Key, ...],
        befores: tuple[object, ...],
        names: tuple[str, ...] | None = None,
        get: Callable[[Mapping[str, Any]], tuple[object, ...]] | None = None,
    ) -> None:
        self.keys = keys
        self.names = names if names is not None else tuple(key[2] for key in keys)
        self.befores = befores
        self._get = get if get is not None else _getter(self.names)

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


class Layout:
    """Keys grouped by the namespace they are bound in, each group with its getter: found
    once (in the warm parent, where every run's processes are forked from), so that a
    snapshot is one lookup of each namespace and one ``itemgetter`` call."""

    def __init__(self, keys: tuple[Key, ...]) -> None:
        self.keys = keys
        by_owner: dict[tuple[str, str], list[Key]] = {}
        for key in keys:
            by_owner.setdefault((key[0], key[1]), []).append(key)
        self._groups = tuple(
            (found, tuple(k[2] for k in found), _getter(tuple(k[2] for k in found)))
            for found in map(tuple, by_owner.values())
        )

    def snapshot(
        self, namespace_of: Callable[[Key], Mapping[str, Any] | None]
    ) -> tuple[tuple[Mapping[str, Any], Group], ...]:
        """Each live namespace (``namespace_of`` finds it: a module's dict, a class's) with a
        :class:`Group` of its keys and what each holds now; keys whose namespace is gone or
        whose attribute is missing or None are left out, as the monitor always did."""
        groups = []
        for keys, names, get in self._groups:
            namespace = namespace_of(keys[0])
            if namespace is None:
                continue
            try:
                values = get(namespace)
            except KeyError:
                values = tuple(namespace.get(name) for name in names)
            if any(map(operator.is_, values, itertools.repeat(None))):
                held = [(k, v) for k, v in zip(keys, values, strict=True) if v is not None]
                if held:
                    ks, vs = zip(*held, strict=True)
                    groups.append((namespace, Group(ks, vs)))
                continue
            groups.append((namespace, Group(keys, values, names, get)))
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
