"""The suite as one bundle: an Evaluator's visible tests, held-out tests, reference and
support files packed into one :class:`~pytest_scorewright.fanout.content.Tree`, and its
settings with each path replaced by the path inside the bundle, so a worker can build the
same Evaluator from the bundle alone.

Layout inside the bundle: ``tests/``, ``heldout/``, ``reference/<name>``, ``gold/<name>`` and
``support/<n>/<name>`` (names are kept: a ``.py`` reference must stay one, and a support
file is copied next to every candidate under its own name).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from pytest_scorewright.fanout.content import Tree, TreeBuilder
from pytest_scorewright.scoring.settings import EvaluatorSettings


def pack_suite(settings: EvaluatorSettings) -> tuple[Tree, EvaluatorSettings]:
    """The bundle of the files ``settings`` name, and the settings for another machine
    (:meth:`~EvaluatorSettings.elsewhere`) with paths inside the bundle."""
    builder = TreeBuilder()
    builder.add("tests", Path(settings.tests), trusted=True)
    heldout = None
    if settings.heldout:
        builder.add("heldout", Path(settings.heldout), trusted=True)
        heldout = "heldout"
    reference, gold = (
        _add(builder, kind, path)
        for kind, path in (("reference", settings.reference), ("gold", settings.gold))
    )
    support = []
    for number, path in enumerate(settings.support_files):
        name = f"support/{number}/{Path(path).resolve().name}"
        builder.add(name, Path(path), trusted=True)
        support.append(name)
    portable = dataclasses.replace(
        settings.elsewhere(),
        tests="tests",
        heldout=heldout,
        reference=reference,
        gold=gold,
        support_files=tuple(support),
    )
    return builder.build(), portable


def _add(builder: TreeBuilder, kind: str, path: str | None) -> str | None:
    """A trusted program (a ``.py`` file or a directory) as ``<kind>/<its name>``."""
    if not path:
        return None
    resolved = Path(path).resolve()
    builder.add(f"{kind}/{resolved.name}", resolved, trusted=True)
    return f"{kind}/{resolved.name}"


def settings_at(portable: EvaluatorSettings, root: Path) -> EvaluatorSettings:
    """The settings of a bundle unpacked at ``root``: every path below it."""

    def below(name: str | None) -> str | None:
        return os.fspath(root.joinpath(*name.split("/"))) if name else None

    return dataclasses.replace(
        portable,
        tests=os.fspath(root / portable.tests),
        heldout=below(portable.heldout),
        reference=below(portable.reference),
        gold=below(portable.gold),
        support_files=tuple(
            os.fspath(root.joinpath(*n.split("/"))) for n in portable.support_files
        ),
    )
