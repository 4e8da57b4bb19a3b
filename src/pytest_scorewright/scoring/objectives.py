"""Objectives: values the tests submit, scored by trusted functions in the parent.

A test sends a plain value (``scorewright.submit("radii", solution.pack(26))``, child/
anchors.py); the parent decodes it (integrity/verdict.py) and calls the objective's function
on it here, in the trusted process, never next to the candidate::

    # objectives.py, beside the tests directory (never copied into a run)
    def total_radius(circles):
        if not valid(circles):
            return 0.0          # an invalid value scores what the function says
        return sum(r for _, _, r in circles)

    Evaluator("tests/", reference="reference/",
              objectives={"radii": "objectives.py:total_radius"})
    # or: scorewright score --objective radii=objectives.py:total_radius ...

The signal ``objective_<name>`` is the mean of the function's values over the submissions of
credited tests. It is absent, with the reason in the result's ``objectives``, when no credited
test submitted a value of that name (never 0 by invention), when the function raised, ran out
of time or returned something that is not a finite number.
"""

from __future__ import annotations

import hashlib
import importlib.util
import math
import os
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_scorewright.child.test_process.anchors import NAME
from pytest_scorewright.errors import ConfigError
from pytest_scorewright.result import ObjectiveResult, Signal, TestRecord

#: How long one call of an objective function may take by default.
TIMEOUT_S = 10.0
#: The prefix of an objective's signal.
PREFIX = "objective_"


@dataclass(frozen=True)
class Objective:
    """One objective: ``source`` is ``"PATH:FUNCTION"`` (a Python file that only the parent
    imports) or a callable; ``minimize`` says lower is better; each call of the function may
    take ``timeout_s``.

    Example::

        Evaluator("tests/", reference="ref/",
                  objectives={"steps": Objective("objectives.py:steps", minimize=True)})
    """

    source: str | Callable[[Any], Any]
    minimize: bool = False
    timeout_s: float = TIMEOUT_S


#: What ``Evaluator(objectives=...)`` takes for each name.
ObjectiveSpec = Objective | str | Callable[[Any], Any] | Mapping[str, Any]


@dataclass(frozen=True)
class Submitted:
    """A submitted value, decoded, and the test that submitted it."""

    test: str
    heldout: bool
    name: str
    value: Any


def parse_option(text: str, *, minimize: bool, option: str) -> tuple[str, Objective]:
    """``NAME=PATH:FUNCTION`` (a command-line ``--objective``) as a name and an Objective."""
    name, sep, source = text.partition("=")
    if not sep or not name.strip() or ":" not in source:
        raise ConfigError(f"{option} {text!r} is not NAME=PATH:FUNCTION, e.g. radii=score.py:radii")
    return name.strip(), Objective(source.strip(), minimize=minimize)


class ObjectiveSet:
    """The objectives of one Evaluator, loaded and checked when it is built.

    ``inside`` are directories copied into runs (the tests, held-out tests, support files):
    an objective file there could be read by a candidate, so it is refused.
    """

    def __init__(
        self, objectives: Mapping[str, ObjectiveSpec] | None, *, inside: Sequence[Path] = ()
    ) -> None:
        self.objectives: dict[str, Objective] = {}
        self.functions: dict[str, Callable[[Any], Any]] = {}
        for name, spec in (objectives or {}).items():
            if not isinstance(name, str) or not NAME.fullmatch(name):
                raise ConfigError(
                    f"objective name {name!r} must be lower-case letters, digits and _, "
                    "starting with a letter (the name tests submit under)"
                )
            if isinstance(spec, Objective):
                objective = spec
            elif isinstance(spec, Mapping):  # its fields
                objective = Objective(**spec)
            else:
                objective = Objective(spec)
            if not (objective.timeout_s > 0 and math.isfinite(objective.timeout_s)):
                raise ConfigError(f"objective {name!r}: timeout_s must be a positive number")
            self.objectives[name] = objective
            self.functions[name] = _load(name, objective.source, inside)

    def __bool__(self) -> bool:
        return bool(self.objectives)

    def score(
        self, submitted: Sequence[Submitted], records: Sequence[TestRecord]
    ) -> tuple[list[Signal], list[ObjectiveResult]]:
        """Each objective's signal and record, from the submissions of credited tests."""
        credited = {(r.heldout, r.nodeid) for r in records if r.credited}
        signals: list[Signal] = []
        results: list[ObjectiveResult] = []
        for name, objective in self.objectives.items():
            values = [
                s.value for s in submitted if s.name == name and (s.heldout, s.test) in credited
            ]
            value, error = self._value(name, objective, values)
            higher = not objective.minimize
            results.append(ObjectiveResult(name, value, higher, len(values), error))
            if value is not None:
                signals.append(Signal(PREFIX + name, value, "score", higher))
        return signals, results

    def _value(
        self, name: str, objective: Objective, values: Sequence[Any]
    ) -> tuple[float | None, str | None]:
        if not values:
            return None, f"no credited test submitted a value named {name!r}"
        scores = []
        for index, value in enumerate(values, 1):
            try:
                raw = _call(self.functions[name], value, objective.timeout_s)
            except Exception as exc:  # the objective's bug or refusal: absent, with why
                return None, f"objective {name!r} raised on submitted value #{index}: {_line(exc)}"
            if isinstance(raw, bool) or not isinstance(raw, (int, float)):
                return None, (
                    f"objective {name!r} returned a {type(raw).__name__} for submitted value "
                    f"#{index}, not a number"
                )
            if not math.isfinite(raw):
                return None, f"objective {name!r} returned {raw!r} for submitted value #{index}"
            scores.append(float(raw))
        return math.fsum(scores) / len(scores), None


def _load(name: str, source: Any, inside: Sequence[Path]) -> Callable[[Any], Any]:
    if callable(source):
        return source  # type: ignore[no-any-return]
    if not isinstance(source, str) or ":" not in source:
        raise ConfigError(
            f"objective {name!r}: {source!r} is not PATH:FUNCTION (or a callable), "
            "e.g. objectives.py:total_radius"
        )
    where, _, attr = source.rpartition(":")
    path = Path(where).expanduser().resolve()
    if path.suffix != ".py" or not path.is_file():
        raise ConfigError(f"objective {name!r}: {where!r} is not a Python file; give PATH:FUNCTION")
    for directory in inside:
        root = directory.resolve()
        if path == root or root in path.parents:
            raise ConfigError(
                f"objective {name!r}: {where} is inside {directory}, which is copied into every "
                "run, where a candidate could read it; put it beside the tests directory"
            )
    # A module name of its own per file, so two objective files never share one.
    digest = hashlib.sha256(os.fsencode(path)).hexdigest()[:16]
    module_name = f"_scorewright_objective_{digest}"
    module = sys.modules.get(module_name)
    if module is None:
        spec = importlib.util.spec_from_file_location(module_name, path)
        if spec is None or spec.loader is None:
            raise ConfigError(f"objective {name!r}: {where} cannot be imported")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module  # dataclasses and pickling look modules up by name
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            del sys.modules[module_name]
            raise ConfigError(
                f"objective {name!r}: {where} cannot be imported ({_line(exc)})"
            ) from None
    function = getattr(module, attr, None)
    if not callable(function):
        raise ConfigError(f"objective {name!r}: {where} has no function {attr!r}")
    return function  # type: ignore[no-any-return]


def _call(function: Callable[[Any], Any], value: Any, timeout_s: float) -> Any:
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = function(value)
        except Exception as exc:  # handed over to the caller's thread
            box["error"] = exc
        except BaseException as exc:  # SystemExit and the like: an error, never an exit
            box["error"] = RuntimeError(f"{type(exc).__name__} {exc}".strip())

    # A thread, not a process: the function is trusted code; the limit guards against its
    # bugs (an endless loop is left running in a daemon thread), as fitness functions are.
    worker = threading.Thread(target=run, name="scorewright-objective", daemon=True)
    worker.start()
    worker.join(timeout_s)
    if worker.is_alive():
        raise TimeoutError(f"took more than {timeout_s:g}s")
    if "error" in box:
        raise box["error"]
    return box.get("value")


def _line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300]}" if text else type(exc).__name__


def take_submissions(
    runs: Sequence[tuple[str, Sequence[Any], Sequence[TestRecord]]],
    expected: Mapping[tuple[str, str, str], int] | None,
) -> tuple[list[Submitted], int, str]:
    """The submissions of a candidate's runs, each ``(suite, verdict submissions, records)``,
    that the reference's pattern allows: with ``expected`` (the reference's count per suite,
    test and name) a test may submit a name at most as often as the reference's did there.
    Returns the accepted ones, how many were not, and the first of those, described."""
    accepted: list[Submitted] = []
    seen: dict[tuple[str, str, str], int] = {}
    refused, first = 0, ""
    for suite, submissions, records in runs:
        heldout = {r.nodeid: r.heldout for r in records}
        for s in submissions:
            key = (suite, s.test, s.name)
            seen[key] = seen.get(key, 0) + 1
            if expected is not None and seen[key] > expected.get(key, 0):
                refused += 1
                first = first or f"{s.name!r} in {s.test[:200]}"
                continue
            accepted.append(Submitted(s.test, heldout.get(s.test, False), s.name, s.value))
    return accepted, refused, first
