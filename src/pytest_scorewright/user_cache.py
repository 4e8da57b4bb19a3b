"""Where scorewright keeps what outlives a process, for the user running it (any process)."""

from __future__ import annotations

import os
from pathlib import Path


def user_cache(*parts: str) -> Path | None:
    """``$XDG_CACHE_HOME/scorewright/<parts>`` (``~/.cache`` where it is not set); None where
    the user has neither (no HOME and no passwd entry: a container's arbitrary uid)."""
    base = os.environ.get("XDG_CACHE_HOME")
    if not base:
        try:
            base = str(Path.home() / ".cache")
        except (RuntimeError, KeyError):
            return None
    return Path(base, "scorewright", *parts)
