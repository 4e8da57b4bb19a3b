"""pytest-scorewright: a pytest suite as an honest, hard-to-game fitness function."""

from typing import TYPE_CHECKING, Any

from pytest_scorewright._version import __version__
from pytest_scorewright.errors import (
    ConfigError,
    InfrastructureError,
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
    "Evaluator",
    "Fitness",
    "FitnessContext",
    "FitnessFunction",
    "InfrastructureError",
    "Integrity",
    "Judge",
    "JudgeSettings",
    "Limits",
    "Objective",
    "Option",
    "OutputPathError",
    "Reason",
    "ResultFormatError",
    "ScoreResult",
    "ScorewrightError",
    "Signal",
    "TestRecord",
    "__version__",
]

if TYPE_CHECKING:
    from pytest_scorewright.evaluator import Evaluator
    from pytest_scorewright.fitness import Fitness, FitnessContext, FitnessFunction, Option
    from pytest_scorewright.judge import Judge, JudgeSettings
    from pytest_scorewright.limits import Limits
    from pytest_scorewright.scoring.objectives import Objective

#: The fitness extension point: what a custom fitness function implements and configures.
_FITNESS = ("Fitness", "FitnessContext", "FitnessFunction", "Option")


def __getattr__(name: str) -> Any:
    # Lazy: `pytest --scorewright-out` loads this package in every run and needs none of the
    # sandbox machinery.
    if name == "Evaluator":
        from pytest_scorewright.evaluator import Evaluator

        return Evaluator
    if name in _FITNESS:
        from pytest_scorewright import fitness

        return getattr(fitness, name)
    if name in ("Judge", "JudgeSettings"):
        from pytest_scorewright import judge

        return getattr(judge, name)
    if name == "Limits":
        from pytest_scorewright.limits import Limits

        return Limits
    if name == "Objective":
        from pytest_scorewright.scoring.objectives import Objective

        return Objective
    raise AttributeError(f"module 'pytest_scorewright' has no attribute {name!r}")
