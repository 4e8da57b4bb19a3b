"""The JSON Schema of the ScoreResult, shipped inside the package."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

SCHEMA_FILE = "scoreresult.schema.json"


def schema_text() -> str:
    return resources.files("pytest_scorewright").joinpath(SCHEMA_FILE).read_text(encoding="utf-8")


def schema() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(schema_text())
    return data
