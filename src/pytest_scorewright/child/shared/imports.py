"""The candidate's own modules win over copies installed in the environment.

The candidate's directory is *appended* to ``sys.path``, so that it can add modules but never
shadow the standard library, pytest or a plugin. A real project's package is often installed
in the scoring environment too (``idna`` and ``attrs`` come with common tools): appended,
the installed copy would be imported instead of the candidate, and every candidate would
score as the installed version. So exactly the modules the tests import the candidate under
are looked up in the candidate's directories first, and only there: a candidate without them
fails to import, rather than getting the installed copy.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Sequence
from types import ModuleType


class CandidateModules(importlib.abc.MetaPathFinder):
    """Finds ``names`` (top-level modules, and so their submodules) in ``paths`` only."""

    def __init__(self, names: Sequence[str], paths: Sequence[str]) -> None:
        self.names = frozenset(names)
        self.paths = list(paths)

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None = None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self.names:
            return None  # submodules are found through their package's __path__
        spec = importlib.machinery.PathFinder.find_spec(fullname, self.paths)
        if spec is None:
            raise ModuleNotFoundError(
                f"No module named {fullname!r} in the candidate", name=fullname
            )
        return spec


def prefer_candidate(names: Sequence[str], paths: Sequence[str]) -> None:
    """Before any test imports: forget copies of ``names`` already imported (the warm parent
    may have imported one) and look them up in ``paths`` first."""
    for loaded in list(sys.modules):
        if loaded.split(".", 1)[0] in names:
            del sys.modules[loaded]
    sys.meta_path.insert(0, CandidateModules(names, paths))
