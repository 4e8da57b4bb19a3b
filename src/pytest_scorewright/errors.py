"""Errors raised by pytest-scorewright.

Every error derives from :class:`ScorewrightError` and its message is one line that names the
problem and the fix, so the CLI can print it as it is.
"""

from __future__ import annotations


class ScorewrightError(Exception):
    """Base class of every error pytest-scorewright raises on purpose."""


class ConfigError(ScorewrightError):
    """A setting (option, ini key, environment variable, argument) has a bad value."""


class OutputPathError(ConfigError):
    """The result file cannot be written where it was asked to go."""


class ResultFormatError(ScorewrightError):
    """A ScoreResult JSON document is malformed or of an unknown schema version."""


class InfrastructureError(ScorewrightError):
    """A run failed for a reason of ours or the machine's, not the candidate's (its warm
    parent died, its job process was lost): scoring it again may well work."""
