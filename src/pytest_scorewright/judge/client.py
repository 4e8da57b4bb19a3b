"""One chat-completions request, through the ``openai`` client library (the ``judge`` extra).

Why that library: it speaks the protocol every OpenAI-compatible server implements (vLLM,
llama.cpp's server, Ollama, hosted providers), and it already does the retrying the judge
needs right: exponential backoff with jitter after a timeout, a lost connection, HTTP 408,
409, 429 or 5xx, honouring the server's ``Retry-After``. OpenEvolve depends on it too, so a
loop that uses OpenEvolve has it already. It is imported only when a judge first sends.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_scorewright._text import bound_message
from pytest_scorewright.judge.judge_settings import JudgeSettings

#: How much of a server's error message a reason quotes.
_ERROR_CHARS = 160


class CallError(Exception):
    """The request brought no reply to read; the message is the reason, in one line."""


@dataclass(frozen=True)
class Reply:
    content: str | None
    #: The server's refusal (``message.refusal``, or ``finish_reason`` content_filter).
    refusal: str | None
    finish_reason: str | None
    tokens_input: int | None
    tokens_output: int | None
    served_model: str | None


class ChatClient:
    """The judge's connection: built on first use, in the parent, with the key read then."""

    def __init__(self, settings: JudgeSettings) -> None:
        self.settings = settings
        self._client: Any = None
        self._lock = threading.Lock()

    def _connected(self) -> Any:
        with self._lock:
            if self._client is None:
                try:
                    import openai
                except ImportError:
                    raise CallError(
                        "the judge needs the openai package: "
                        "pip install 'pytest-scorewright[judge]'"
                    ) from None
                key = self.settings.api_key()
                if key is None:
                    raise CallError(f"no API key: set {self.settings.key_hint()}")
                self._client = openai.OpenAI(
                    api_key=key,
                    base_url=self.settings.base_url,
                    timeout=self.settings.timeout_s,
                    max_retries=self.settings.retries,
                    default_headers=dict(self.settings.extra_headers) or None,
                )
            return self._client

    def complete(self, messages: Sequence[Mapping[str, str]]) -> Reply:
        client = self._connected()
        s = self.settings
        options: dict[str, Any] = {"max_tokens": s.max_tokens, "temperature": s.temperature}
        if s.json_mode:
            options["response_format"] = {"type": "json_object"}
        try:
            response = client.chat.completions.create(
                model=s.model, messages=[dict(m) for m in messages], **options
            )
        except Exception as exc:  # every failure of the request becomes its reason
            raise CallError(_reason(exc, s)) from None
        return _reply(response)


def _reply(response: Any) -> Reply:
    choices = getattr(response, "choices", None) or []
    if not choices:
        raise CallError("the endpoint's reply has no choices")
    choice = choices[0]
    message = getattr(choice, "message", None)
    usage = getattr(response, "usage", None)
    finish = getattr(choice, "finish_reason", None)
    refusal = getattr(message, "refusal", None)
    if refusal is None and finish == "content_filter":
        refusal = "stopped by the provider's content filter"
    return Reply(
        content=getattr(message, "content", None),
        refusal=refusal,
        finish_reason=finish,
        tokens_input=getattr(usage, "prompt_tokens", None),
        tokens_output=getattr(usage, "completion_tokens", None),
        served_model=getattr(response, "model", None),
    )


def _reason(exc: Exception, s: JudgeSettings) -> str:
    import openai

    tries = f"{s.retries + 1} {'try' if s.retries == 0 else 'tries'}"
    if isinstance(exc, openai.APITimeoutError):
        return f"timed out: no reply within {s.timeout_s:g}s ({tries})"
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc.__context__ or exc
        return f"cannot reach {s.base_url} ({tries}): {_short(cause)}"
    if isinstance(exc, openai.RateLimitError):
        return f"rate limited: HTTP 429 after {tries}"
    if isinstance(exc, openai.AuthenticationError):
        return f"the endpoint refused the API key (HTTP 401); check {s.key_hint()}"
    if isinstance(exc, openai.APIStatusError):
        return f"the endpoint answered HTTP {exc.status_code}: {_short(exc)}"
    return f"the request failed: {_short(exc)}"


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    first = text[0] if text else type(exc).__name__
    return bound_message(f"{type(exc).__name__}: {first}", _ERROR_CHARS)
