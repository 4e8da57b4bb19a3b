"""A judge's settings, checked when it is built; where its API key comes from.

The key is read in the trusted parent when the first request goes out, from an environment
variable or a file: it is never a setting's value, so it is in no ``repr``, recipe or
result, and the sandbox's environment (an allow-list) never carries it.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from pytest_scorewright.errors import ConfigError

#: The environment variable the API key is read from unless ``api_key_env`` names another.
KEY_ENV = "SCOREWRIGHT_JUDGE_API_KEY"

DEFAULT_RUBRIC = """\
Score the program's quality as a reviewer would, from 0 (poor) to 1 (excellent):
- clarity: names, structure and flow a reader can follow;
- simplicity: no needless code, no duplicated logic;
- robustness: edge cases and bad input handled where the task implies them;
- idiom: the language and its standard library used as intended.
Correctness is measured separately by the tests (see the facts); do not re-score it."""


@dataclass(frozen=True)
class JudgeSettings:
    """What a :class:`~pytest_scorewright.judge.Judge` talks to and how.

    Example::

        JudgeSettings(model="gpt-4o-mini", base_url="https://api.openai.com/v1")
    """

    #: The model name the endpoint serves (also the price table's key).
    model: str
    #: An OpenAI-compatible endpoint, up to and including ``/v1``.
    base_url: str = "https://api.openai.com/v1"
    api_key_env: str = KEY_ENV
    #: A file holding the key (first line); read when the environment variable is unset.
    api_key_file: str | None = None
    #: Seconds one request may take before it is abandoned (and retried).
    timeout_s: float = 60.0
    #: Retries after a timeout, a lost connection, HTTP 408/409/429 or 5xx, with exponential
    #: backoff (0.5 s doubling, jittered) or the server's Retry-After.
    retries: int = 2
    #: Requests in flight at once, over every thread of this process using this judge.
    concurrency: int = 4
    #: Tokens (in + out, as the endpoint reports them) this judge may spend; None: no limit.
    token_budget: int | None = None
    #: The pass rate a candidate needs to be judged; None judges every scored candidate.
    gate: float | None = 1.0
    rubric: str = DEFAULT_RUBRIC
    #: Judge each candidate again with a planted injection; the difference is the
    #: ``judge_injection_shift`` signal, and as written: the ``judge_words_shift`` signal.
    canary: bool = False
    max_tokens: int = 300
    temperature: float = 0.0
    #: Ask for ``response_format: json_object`` (vLLM, llama.cpp's server, Ollama and OpenAI
    #: take it); off for a server that rejects the field.
    json_mode: bool = True
    #: The longest program (after neutralising) sent, in characters; longer is not judged.
    max_program_chars: int = 60_000
    extra_headers: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _check(self)

    @classmethod
    def of(cls, values: Mapping[str, Any], where: str = "judge") -> JudgeSettings:
        """Settings from ``KEY=VALUE`` text (the CLI's ``--judge``) or plain values."""
        known = {f.name: f for f in fields(cls)}
        unknown = sorted(set(values) - set(known))
        if unknown:
            raise ConfigError(
                f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(known))})"
            )
        if "model" not in values:
            raise ConfigError(f"{where}: no model; give model=NAME (and base_url=URL)")
        converted = {k: _convert(where, k, v, cls) for k, v in values.items()}
        return cls(**converted)

    def api_key(self) -> str | None:
        """The key, from ``api_key_env`` or else ``api_key_file``; None when neither has one."""
        key = os.environ.get(self.api_key_env, "").strip()
        if key:
            return key
        if self.api_key_file:
            try:
                lines = Path(self.api_key_file).read_text(encoding="utf-8").splitlines()
            except OSError:
                return None
            return lines[0].strip() if lines and lines[0].strip() else None
        return None

    def key_hint(self) -> str:
        where = f"the environment variable {self.api_key_env}"
        if self.api_key_file:
            where += f" or the file {self.api_key_file}"
        return where


def _check(s: JudgeSettings) -> None:
    if not s.model.strip():
        raise ConfigError("judge: model must name the model the endpoint serves")
    if not s.base_url.startswith(("http://", "https://")):
        raise ConfigError(f"judge: base_url {s.base_url!r} must start with http:// or https://")
    if not (math.isfinite(s.timeout_s) and s.timeout_s > 0):
        raise ConfigError(f"judge: timeout_s must be a positive number, not {s.timeout_s!r}")
    for name, minimum in (("retries", 0), ("concurrency", 1), ("max_tokens", 1)):
        value = getattr(s, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ConfigError(f"judge: {name} must be a whole number >= {minimum}, not {value!r}")
    if s.token_budget is not None and (isinstance(s.token_budget, bool) or s.token_budget < 1):
        raise ConfigError(f"judge: token_budget must be at least 1, not {s.token_budget!r}")
    if s.gate is not None and not 0.0 <= s.gate <= 1.0:
        raise ConfigError(f"judge: gate must be a pass rate from 0 to 1 (or none), not {s.gate}")
    if not s.rubric.strip():
        raise ConfigError("judge: rubric is empty; leave it out for the default rubric")
    if s.max_program_chars < 1:
        raise ConfigError("judge: max_program_chars must be at least 1")


def _convert(where: str, key: str, value: Any, cls: type[JudgeSettings]) -> Any:
    """A ``--judge KEY=VALUE`` string to the field's kind (plain values pass through)."""
    if not isinstance(value, str):
        return value
    default = next(f.default for f in fields(cls) if f.name == key)
    text = value.strip()
    try:
        if key in ("token_budget", "gate", "api_key_file") and text.lower() in ("none", ""):
            return None
        if key == "rubric" and text.startswith("@"):  # rubric=@FILE
            return Path(text.lstrip("@")).read_text(encoding="utf-8")
        if isinstance(default, bool):
            if text.lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError(text)
            return text.lower() in ("true", "1", "yes")
        if isinstance(default, int) or key == "token_budget":
            return int(text)
        if isinstance(default, float) or key == "gate":
            return float(text)
        if key == "extra_headers":
            raise ValueError("give headers through the Python API")
    except (ValueError, OSError) as exc:
        raise ConfigError(f"{where}: {key}={value!r} is not valid ({exc}); fix the value") from None
    return text
