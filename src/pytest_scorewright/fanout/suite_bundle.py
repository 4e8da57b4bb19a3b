"""The suite as one bundle: an Evaluator's visible tests, held-out tests, reference and
support files packed into one :class:`~pytest_scorewright.fanout.content.Tree`, and its
recipe with each path replaced by the path inside the bundle, so a worker can build the
same Evaluator from the bundle alone.

Layout inside the bundle: ``tests/``, ``heldout/``, ``reference/<name>`` and
``support/<n>/<name>`` (names are kept: a ``.py`` reference must stay one, and a support
file is copied next to every candidate under its own name).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pytest_scorewright.fanout.content import Tree, TreeBuilder


def pack_suite(recipe: dict[str, Any]) -> tuple[Tree, dict[str, Any]]:
    """The bundle of the files ``recipe`` names, and the recipe with paths inside it."""
    builder = TreeBuilder()
    portable = dict(recipe)
    builder.add("tests", Path(recipe["tests"]), trusted=True)
    portable["tests"] = "tests"
    if recipe["heldout"]:
        builder.add("heldout", Path(recipe["heldout"]), trusted=True)
        portable["heldout"] = "heldout"
    if recipe["reference"]:
        reference = Path(recipe["reference"]).resolve()
        portable["reference"] = f"reference/{reference.name}"
        builder.add(portable["reference"], reference, trusted=True)
    portable["support_files"] = []
    for number, support in enumerate(recipe["support_files"]):
        name = f"support/{number}/{Path(support).resolve().name}"
        builder.add(name, Path(support), trusted=True)
        portable["support_files"].append(name)
    return builder.build(), portable


def recipe_at(portable: dict[str, Any], root: Path) -> dict[str, Any]:
    """The recipe of a bundle unpacked at ``root``: every path below it."""
    recipe = dict(portable)
    for key in ("tests", "heldout", "reference"):
        if recipe[key]:
            recipe[key] = os.fspath(root.joinpath(*recipe[key].split("/")))
    recipe["support_files"] = [
        os.fspath(root.joinpath(*name.split("/"))) for name in recipe["support_files"]
    ]
    return recipe
