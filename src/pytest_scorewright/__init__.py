"""pytest-scorewright: a pytest suite as an honest, hard-to-game fitness function."""

from pytest_scorewright._version import __version__
from pytest_scorewright.errors import (
    ConfigError,
    OutputPathError,
    ResultFormatError,
    ScorewrightError,
)
from pytest_scorewright.result import (
    SCHEMA_VERSION,
    Integrity,
    Reason,
    ScoreResult,
    Signal,
    TestRecord,
)

__all__ = [
    "SCHEMA_VERSION",
    "ConfigError",
    "Integrity",
    "OutputPathError",
    "Reason",
    "ResultFormatError",
    "ScoreResult",
    "ScorewrightError",
    "Signal",
    "TestRecord",
    "__version__",
]
