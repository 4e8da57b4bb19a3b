"""The Judge: one judgement of one program, with the cache, the token budget and the limit
on requests in flight; and the planted-injection canary.

A judgement that could not be made is ``ok: false`` with its reason and no score: never a
default value (docs/judge.md lists every reason).
"""

from __future__ import annotations

import dataclasses
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_scorewright._text import bound_message
from pytest_scorewright.fitness import EXAMPLE_PRICES_2026_11, cost_metrics
from pytest_scorewright.judge.client import CallError, ChatClient, Reply
from pytest_scorewright.judge.judge_settings import JudgeSettings
from pytest_scorewright.judge.prompt import (
    exposed_messages,
    hardened_messages,
    planted,
    rubric_digest,
)
from pytest_scorewright.judge.prompt_text import RenderError, as_written, render
from pytest_scorewright.judge.reply import ReplyError, parse_reply

#: Judgements kept for re-proposed programs (least recently used dropped first).
CACHE_SIZE = 4096
#: Longest reason kept, in characters.
_REASON_CHARS = 300

Files = Sequence[tuple[str, str]]


@dataclass(frozen=True)
class Judgement:
    """One judgement: ``score`` and ``rationale`` when ``ok``, else ``reason`` says why not.
    Tokens and cost are what this judgement spent (0 for one from the cache; None where
    the endpoint reported no usage, or the model has no price)."""

    ok: bool
    score: float | None
    rationale: str | None
    reason: str | None
    model: str
    tokens_input: int | None = None
    tokens_output: int | None = None
    cost_usd: float | None = None
    cached: bool = False
    served_model: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class Canary:
    """The same program judged with and without the planted injection
    (:data:`pytest_scorewright.judge.prompt.INJECTION`)."""

    ok: bool
    shift: float | None
    clean_score: float | None
    injected_score: float | None
    reason: str | None = None
    #: The program judged as written (its own names, comments and strings), against the
    #: neutral view the credited score comes from: words already in the program that move
    #: the judge show here (an injection attempt, or names that read well). None if that
    #: judgement failed.
    as_written_score: float | None = None
    words_shift: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class Judge:
    """An LLM judge of program quality on an OpenAI-compatible endpoint, run by the parent.

    Example::

        judge = Judge(model="gpt-4o-mini")  # key from SCOREWRIGHT_JUDGE_API_KEY
        evaluator = Evaluator("tests/", judge=judge)
        evaluator.score("candidate.py").signal("judge_score")  # None when not judged

    Keywords are :class:`~pytest_scorewright.judge.judge_settings.JudgeSettings`'; ``prices`` is
    the price table (USD per million tokens by model), the example table by default.
    """

    def __init__(
        self,
        settings: JudgeSettings | None = None,
        *,
        prices: Mapping[str, Mapping[str, float]] | None = None,
        **values: Any,
    ) -> None:
        if settings is None:
            settings = JudgeSettings.of(values)
        elif values:
            settings = dataclasses.replace(settings, **values)
        self.settings = settings
        self.prices = dict(prices) if prices is not None else dict(EXAMPLE_PRICES_2026_11)
        self._client = ChatClient(settings)
        self._slots = threading.BoundedSemaphore(settings.concurrency)
        self._lock = threading.Lock()
        self._cache: OrderedDict[tuple[str, str, str], Judgement] = OrderedDict()
        self._rubric = rubric_digest(settings.rubric)
        #: This judge's spending so far: requests, cache hits, tokens, USD.
        self.usage: dict[str, float] = dict.fromkeys(
            ("requests", "cache_hits", "tokens_input", "tokens_output", "cost_usd"), 0.0
        )

    def __repr__(self) -> str:
        # Names the settings (a digest of them, too: OpenEvolve's adapter keys its evaluators
        # by repr); the key is no setting, so it is never in it.
        digest = hashlib.sha256(repr(self.settings).encode()).hexdigest()[:12]
        s = self.settings
        return f"Judge(model={s.model!r}, base_url={s.base_url!r}, settings={digest})"

    # -- judging -----------------------------------------------------------------------------

    def assess(
        self, source: str | Files, facts: Mapping[str, float | str] | None = None
    ) -> Judgement:
        """Judge program text (one file's source, or ``(name, source)`` pairs): neutralised,
        delimited, with the trusted ``facts`` beside it."""
        files = [("program.py", source)] if isinstance(source, str) else list(source)
        try:
            shown = render(files, self.settings.max_program_chars)
        except RenderError as exc:
            return self._failed(str(exc))
        key = (hashlib.sha256(shown.encode()).hexdigest(), self._rubric, self.settings.model)
        messages = hardened_messages(shown, facts or {}, self.settings.rubric)
        return self._ask(key, messages)

    def assess_exposed(self, source: str) -> Judgement:
        """Judge the raw source the way a judge without the hardening does
        (``prompt.exposed_messages``): for measuring what the hardening buys, only."""
        key = (hashlib.sha256(source.encode()).hexdigest(), "exposed:" + self._rubric, "")
        return self._ask(key, exposed_messages(source, self.settings.rubric))

    def canary(
        self, source: str | Files, clean: Judgement, facts: Mapping[str, float | str] | None = None
    ) -> Canary:
        """Judge ``source`` again with the injection planted (in its first file) and compare
        with ``clean``, its judgement without: the shift is how far the words moved it."""
        files = [("program.py", source)] if isinstance(source, str) else list(source)
        if not clean.ok or clean.score is None or not files:
            return Canary(False, None, None, None, "the program itself has no judgement")
        name, first = files[0]
        injected = self.assess([(name, planted(first)), *files[1:]], facts)
        if not injected.ok or injected.score is None:
            return Canary(False, None, clean.score, None, injected.reason)
        written = self._as_written(files, facts)
        words = written.score - clean.score if written.score is not None else None
        return Canary(
            True, injected.score - clean.score, clean.score, injected.score,
            as_written_score=written.score, words_shift=words,
        )  # fmt: skip

    def _as_written(self, files: Files, facts: Mapping[str, float | str] | None) -> Judgement:
        """The program's own words inside the hardened prompt: the canary's other half."""
        try:
            shown = as_written(files, self.settings.max_program_chars)
        except RenderError as exc:
            return self._failed(str(exc))
        digest = hashlib.sha256(shown.encode()).hexdigest()
        key = (digest, "written:" + self._rubric, self.settings.model)
        return self._ask(key, hardened_messages(shown, facts or {}, self.settings.rubric))

    def _ask(self, key: tuple[str, str, str], messages: list[dict[str, str]]) -> Judgement:
        with self._lock:
            found = self._cache.get(key)
            if found is not None:
                self._cache.move_to_end(key)
                self.usage["cache_hits"] += 1
                return dataclasses.replace(
                    found, tokens_input=0, tokens_output=0, cost_usd=0.0, cached=True
                )
            budget = self.settings.token_budget
            spent = self.usage["tokens_input"] + self.usage["tokens_output"]
            if budget is not None and spent >= budget:
                return self._failed(f"the judge's token budget ({budget}) is spent")
            self.usage["requests"] += 1
        try:
            with self._slots:
                reply = self._client.complete(messages)
        except CallError as exc:
            return self._failed(str(exc))
        judgement = self._read(reply, messages)
        if judgement.ok:
            with self._lock:
                self._cache[key] = judgement
                while len(self._cache) > CACHE_SIZE:
                    self._cache.popitem(last=False)
        return judgement

    def _read(self, reply: Reply, messages: list[dict[str, str]]) -> Judgement:
        """The reply as a judgement, its tokens and cost counted whether or not it scores."""
        tokens_in, tokens_out = reply.tokens_input, reply.tokens_output
        if tokens_in is None or tokens_out is None:
            # Not reported: the budget still counts an estimate (4 characters a token).
            estimate = sum(len(m["content"]) for m in messages) // 4 + len(reply.content or "") // 4
            tokens_in, tokens_out, cost = None, None, None
            with self._lock:
                self.usage["tokens_input"] += estimate
        else:
            cost = self._cost(tokens_in, tokens_out)
            with self._lock:
                self.usage["tokens_input"] += tokens_in
                self.usage["tokens_output"] += tokens_out
                self.usage["cost_usd"] += cost or 0.0
        spent: dict[str, Any] = {
            "tokens_input": tokens_in,
            "tokens_output": tokens_out,
            "cost_usd": cost,
            "served_model": reply.served_model,
        }
        if reply.refusal is not None:
            return self._failed(f"the judge refused: {reply.refusal}", **spent)
        if reply.finish_reason == "length":
            why = f"the reply was cut at max_tokens {self.settings.max_tokens}"
            return self._failed(why, **spent)
        try:
            score, rationale = parse_reply(reply.content)
        except ReplyError as exc:
            return self._failed(str(exc), **spent)
        rationale = bound_message(rationale, 600)
        return Judgement(True, score, rationale, None, self.settings.model, **spent)

    def _cost(self, tokens_in: int, tokens_out: int) -> float | None:
        meta = {
            "tokens_input": str(tokens_in),
            "tokens_output": str(tokens_out),
            "model": self.settings.model,
        }
        return cost_metrics(meta, self.prices).get("cost_usd")

    def _failed(self, reason: str, **spent: Any) -> Judgement:
        return Judgement(
            False, None, None, bound_message(reason, _REASON_CHARS), self.settings.model, **spent
        )
