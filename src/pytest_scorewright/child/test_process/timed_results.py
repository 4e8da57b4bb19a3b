"""Every timed result counts: what the benchmark fixture's timed calls return is checked.

A candidate can answer the calls that arrive in a burst (the timed rounds) with a cheap
guess, and only a call that arrives after a quiet gap (the one whose result a test asserts)
honestly: the speed is then garbage's. So, outside the clock:

- a sample of the timed calls' results, drawn where the candidate cannot see which (a
  reservoir over the rounds, one call per round), is kept;
- after the rounds, a few of the sampled calls are made again on a copy of the same
  arguments (taken before the round, so a function that changes its arguments gets them as
  they were), each after a quiet gap, and their results must equal the timed ones;
- with the same arguments in every round (``benchmark(fn, ...)``, ``pedantic`` without
  ``setup``), every sampled result must also equal the first.

Equal means the same builtin data (:func:`fingerprint`): floats bit for bit (the same code on
the same arguments gives the same bits), dicts and sets whatever their order. A result or
arguments that are not builtin data (a candidate's object, an array) are not checked here; a
candidate object where the reference returned plain data is evidence of its own
(``returned_handle``). A mismatch is the ``timed_result_differs`` finding, which the parent
sets against what the reference did in the same test: a function whose own results vary
(a random choice among right answers) is not held against a candidate that varies too.

With fresh arguments every round (``pedantic(setup=...)``), ``random``'s state is seeded for
each round's ``setup`` from the test's name and the round's number, so the reference's run
and every candidate's get the same arguments round by round; each round's
:func:`round_print` (the arguments' digest and a digest of the result with floats rounded to
:data:`FLOAT_DIGITS` significant digits) goes to the parent, which compares them with the
reference's rounds on the same arguments (integrity/timed.py).
"""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Callable, Mapping
from typing import Any

from pytest_scorewright.protocol import wire
from pytest_scorewright.protocol.values import (
    NotPlainData,
    TooLarge,
    canonical,
    decode_plain,
    plain,
)

#: Timed results kept per benchmark (a reservoir over the rounds) and checked after them.
KEPT = 32
#: Of those, how many are called again after a quiet gap.
RECALLS = 3
#: The quiet gap before each call made again: longer than any burst's spacing.
QUIET_S = 0.01
#: What one fingerprint may cost: nodes, characters.
BUDGET = (200_000, 20_000_000)

#: Seeded from the OS, apart from ``random``'s global state (which tests and setup use).
_draw = random.SystemRandom()
#: Rounds whose prints go to the parent, at most.
PRINTED_ROUNDS = wire.MAX_ROUND_PRINTS
#: Floats of a result compared with the reference's to this many significant digits: two
#: right answers computed differently agree there, a guess does not.
FLOAT_DIGITS = 6

Arguments = tuple[tuple[Any, ...], dict[str, Any]]


def fingerprint(value: Any) -> bytes | None:
    """A digest of ``value`` as builtin data (order-free for dicts and sets), or None where
    it is not builtin data or too large to check."""
    try:
        found = plain(value, budget=list(BUDGET))
    except (NotPlainData, TooLarge, RecursionError, ValueError):
        return None
    return hashlib.blake2b(canonical(found).encode(), digest_size=16).digest()


def round_print(arguments: Arguments) -> Callable[[Any], str]:
    """A round's print, ``<arguments' digest>:<result's digest, floats rounded>``, given
    its result; the arguments are read now, before the call can change them. Empty where
    either is not builtin data."""
    given = fingerprint([list(arguments[0]), arguments[1]])

    def made(result: Any) -> str:
        found = fingerprint(_rounded(result, 0)) if given is not None else None
        return f"{given.hex()}:{found.hex()}" if given is not None and found is not None else ""

    return made


def _rounded(value: Any, depth: int) -> Any:
    """``value`` with every float rounded to FLOAT_DIGITS significant digits (exact builtin
    containers only; anything else as it is, for plain() to judge)."""
    kind = type(value)
    if kind is float:
        return float(f"{value:.{FLOAT_DIGITS}g}")
    if depth > 50:
        return value
    if kind is list or kind is tuple:
        return kind(_rounded(v, depth + 1) for v in value)
    if kind is dict:
        return {k: _rounded(v, depth + 1) for k, v in value.items()}
    if kind is set or kind is frozenset:
        return kind(_rounded(v, depth + 1) for v in value)
    return value


#: The key of the rounds' seeds: the Evaluator's own (``use_round_key``), empty in plugin
#: mode. Without it a candidate that knows a test's name and its ``setup`` could work out
#: every round's arguments and have the answers ready before the first round.
_round_key = b""


def use_round_key(key: str) -> None:
    """Key the rounds' seeds with ``key`` (hex, from the run's spec), before any candidate
    code is imported."""
    global _round_key
    _round_key = bytes.fromhex(key)[:64]


def seeded(test: str, index: int) -> int:
    """The seed of round ``index``'s setup in ``test``: the same in every run of one
    Evaluator, unknown to the candidate (apart, it never sees the key)."""
    digest = hashlib.blake2b(f"{test}:{index}".encode(), key=_round_key).digest()
    return int.from_bytes(digest[:8], "big")


def _copy(arguments: Arguments) -> Any | None:
    """The arguments as builtin data (a copy nothing can change), or None."""
    try:
        return plain([list(arguments[0]), arguments[1]], budget=list(BUDGET))
    except (NotPlainData, TooLarge, RecursionError, ValueError):
        return None


class TimedResults:
    """The check of one benchmark's timed results (see the module docstring)."""

    def __init__(self, *, same_arguments: bool) -> None:
        self.same_arguments = same_arguments
        #: (arguments as builtin data or None, result) of the sampled calls.
        self._kept: list[tuple[Any | None, Any]] = []
        self._rounds = 0
        self._arguments: Any | None = None
        self._first: bytes | None = None
        self._slot: int | None = None
        self._copied = False

    def pick(self, iterations: int) -> int:
        """Which call of a round of ``iterations`` calls to keep."""
        return _draw.randrange(iterations)

    def before(self, arguments: Arguments) -> Any | None:
        """Called before a round (outside the clock): a copy of its arguments, where this
        round may be sampled."""
        self._slot = self._draw_slot(self._rounds)
        if self.same_arguments:
            if not self._copied:  # before the first call of all: as the test gave them
                self._arguments, self._copied = _copy(arguments), True
            return self._arguments
        return _copy(arguments) if self._slot is not None else None

    def first(self, result: Any) -> None:
        """The result the test got (same arguments in every round): every other must equal it."""
        self._first = fingerprint(result)

    def after(self, copied: Any | None, result: Any) -> None:
        """Called after a round (outside the clock) with the kept call's result."""
        slot, self._slot = self._slot, None
        self._rounds += 1
        if slot is None:
            return
        if slot == len(self._kept):
            self._kept.append((copied, result))
        else:
            self._kept[slot] = (copied, result)

    @staticmethod
    def _draw_slot(index: int) -> int | None:
        """Reservoir sampling: the slot round ``index`` takes, or none."""
        if index < KEPT:
            return index
        chosen = _draw.randrange(index + 1)
        return chosen if chosen < KEPT else None

    def check(self, target: Callable[..., Any]) -> str | None:
        """After the rounds: what differs, in a line, or None when everything agrees."""
        kept = [(args, fingerprint(result)) for args, result in self._kept]
        if self.same_arguments and self._first is not None:
            differ = sum(found != self._first for _, found in kept)
            if differ:
                return (
                    f"{differ} of {len(kept)} sampled timed calls returned something else than "
                    "the first call, on the same arguments"
                )
        checkable = [(a, f) for a, f in kept if a is not None and f is not None]
        for copied, timed in _draw.sample(checkable, min(RECALLS, len(checkable))):
            time.sleep(QUIET_S)
            args, kwargs = decode_plain(copied)
            try:
                again = fingerprint(target(*args, **_keywords(kwargs)))
            except Exception as exc:  # a call that returned before raises now
                return f"a timed call made again after a pause raised {type(exc).__name__}"
            if again != timed:
                return (
                    "a timed call made again on the same arguments, after a pause, returned "
                    "something else than it had in the timed rounds"
                )
        return None


def _keywords(found: Any) -> Mapping[str, Any]:
    return {str(k): v for k, v in dict(found).items()}
