"""Proposed held-out tests: new inputs for the functions the visible tests call with plain
arguments, drawn with Hypothesis strategies inferred from the arguments seen (ints, floats,
strings, lists, tuples), answered by the reference in a process of its own (oracle.py), and
kept only when some mutant the visible tests miss answers differently. The kept tests are
written as a plain pytest file for a person to review and drop into the held-out directory.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_scorewright.audit.facts import Facts
from pytest_scorewright.audit.oracle import Answer, answers, literal_request

#: Inputs drawn per function and arity, and tests proposed at most.
EXAMPLES = 80
MAX_TESTS = 25
#: Characters added to those seen in strings, so new inputs reach past the visible ones.
_EXTRA_CHARS = "é 0"
#: A string's runs: ASCII digits, letters, and anything else, one run each.
_RUNS = re.compile(r"[0-9]+|[^\W\d_]+|[\W_]+")


@dataclass
class Proposal:
    function: str
    args: str
    expected: Answer
    kills: list[str] = field(default_factory=list)

    def source(self, index: int) -> str:
        call = f"{self.function}{self.args}"
        name = f"test_{self.function}_{index}"
        why = "".join(f"\n    # kills {k}" for k in self.kills)
        if self.expected.outcome == "raised":
            return (
                f"def {name}() -> None:{why}\n    with pytest.raises({self.expected.value}):\n"
                f"        {call}\n"
            )
        return f"def {name}() -> None:{why}\n    assert {call} == {self.expected.value}\n"


def hypothesis_available() -> bool:
    try:
        import hypothesis  # noqa: F401 - only whether it imports
    except ImportError:
        return False
    return True


def inputs(visible: Sequence[Answer], examples: int = EXAMPLES) -> dict[str, list[str]]:
    """New argument tuples (``repr`` text) per function, drawn from strategies inferred from
    the visible tests' arguments."""
    from hypothesis import strategies as st

    seen: dict[tuple[str, int], list[tuple[Any, ...]]] = defaultdict(list)
    for a in visible:
        if a.args is not None and a.kwargs == "{}":
            args = ast.literal_eval(a.args)
            seen[(a.function, len(args))].append(args)
    found: dict[str, list[str]] = defaultdict(list)
    for (function, arity), calls in seen.items():
        if arity == 0:
            continue
        parts = [_strategy([c[i] for c in calls]) for i in range(arity)]
        if any(p is None for p in parts):
            continue
        known = {repr(c) for c in calls}
        drawn = _draw(st.tuples(*parts), examples)
        found[function].extend(t for t in dict.fromkeys(repr(d) for d in drawn) if t not in known)
    return found


def _draw(strategy: Any, examples: int) -> list[Any]:
    """``examples`` values of ``strategy``, the same on every run (derandomized)."""
    from hypothesis import HealthCheck, Phase, given, settings

    drawn: list[Any] = []

    @settings(
        max_examples=examples,
        database=None,
        derandomize=True,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def collect(value: Any) -> None:
        drawn.append(value)

    collect()
    return drawn


def _strategy(values: Sequence[object]) -> Any:
    """A Hypothesis strategy for values shaped like ``values``, a little wider; None where
    their shape is not one this reads."""
    from hypothesis import strategies as st

    kinds = {type(v) for v in values}
    if len(kinds) > 1:
        groups = [_strategy([v for v in values if type(v) is k]) for k in kinds]
        return None if any(g is None for g in groups) else st.one_of(*groups)
    kind = next(iter(kinds))
    maker = _MAKERS.get(kind)
    return None if maker is None else maker(values)


def _ints(values: Sequence[Any]) -> Any:
    from hypothesis import strategies as st

    low, high = min(values), max(values)
    span = max(high - low, 10)
    return st.integers(low - span, high + span)


def _floats(values: Sequence[Any]) -> Any:
    from hypothesis import strategies as st

    low, high = min(values), max(values)
    span = max(high - low, 10.0)
    return st.floats(low - span, high + span, allow_nan=False, allow_infinity=False)


def _texts(values: Sequence[Any]) -> Any:
    """Text over the characters seen (and a few more), or a seen string's shape with new
    numbers and words in it: ``"2.3.7"`` gives ``"0.3.12"``, ``">=2.3.6"`` gives
    ``">=2.3.7"``, so formats a function parses (versions, sizes, dates) are reached, not
    only rejected."""
    from hypothesis import strategies as st

    chars = sorted(set("".join(values)) | set(_EXTRA_CHARS))
    free = st.text(st.sampled_from(chars), max_size=max(map(len, values)) + 4)
    shapes = sorted({tuple(_RUNS.findall(v)) for v in values if _RUNS.findall(v)})
    if not shapes:
        return free
    words = sorted({r for shape in shapes for r in shape if r.isalpha()})
    high = max((int(r) for shape in shapes for r in shape if r.isdigit()), default=0)
    numbers = st.integers(0, min(high, 10**9) + 10).map(str)

    def part(run: str) -> Any:
        if run.isdigit():
            return numbers
        if run.isalpha():
            return st.sampled_from(words)
        return st.just(run)

    shaped = st.sampled_from(shapes).flatmap(
        lambda shape: st.tuples(*map(part, shape)).map("".join)
    )
    return st.one_of(shaped, shaped, shaped, free)  # mostly the seen shapes


def _lists(values: Sequence[Any]) -> Any:
    from hypothesis import strategies as st

    items = [item for v in values for item in v]
    inner = _strategy(items) if items else None
    return None if inner is None else st.lists(inner, max_size=max(map(len, values)) + 3)


def _tuples(values: Sequence[Any]) -> Any:
    from hypothesis import strategies as st

    if len({len(v) for v in values}) != 1 or not values[0]:
        return None
    parts = [_strategy([v[i] for v in values]) for i in range(len(values[0]))]
    return None if any(p is None for p in parts) else st.tuples(*parts)


def _bools(values: Sequence[Any]) -> Any:
    from hypothesis import strategies as st

    return st.booleans()


_MAKERS: dict[type, Callable[[Sequence[Any]], Any]] = {
    int: _ints,
    float: _floats,
    str: _texts,
    list: _lists,
    tuple: _tuples,
    bool: _bools,
}


def propose(
    facts: Facts,
    visible: Sequence[Answer],
    survivors: Sequence[tuple[str, Path]],
    modules: Sequence[str],
) -> list[Proposal]:
    """Inputs on which a surviving mutant (name, candidate directory) and the reference
    disagree, fewest first covering every mutant that can be told apart."""
    drawn = inputs(visible)
    calls = [literal_request(f, args) for f, many in drawn.items() for args in many]
    expected = answers(facts.reference, modules, facts.names, calls)
    kept = [
        (i, e) for i, e in enumerate(expected) if e.outcome in ("returned", "raised") and e.literal
    ]
    if not kept or not survivors:
        return []
    chosen = [calls[i] for i, _ in kept]
    killed: dict[int, list[str]] = defaultdict(list)
    for name, path in survivors:
        theirs = answers(path, modules, facts.names, chosen)
        for j, ((_, mine), other) in enumerate(zip(kept, theirs, strict=True)):
            if other.outcome in ("returned", "raised") and not mine.same(other):
                killed[j].append(name)
    return _cover(
        [
            Proposal(e.function, str(calls[i]["args_repr"]), e, killed[j])
            for j, (i, e) in enumerate(kept)
            if killed[j]
        ]
    )


def _cover(candidates: list[Proposal]) -> list[Proposal]:
    """A few inputs that together kill every mutant any of them kills (greedy set cover)."""
    left = {name for p in candidates for name in p.kills}
    chosen: list[Proposal] = []
    while left and len(chosen) < MAX_TESTS:
        best = max(candidates, key=lambda p: (len(left.intersection(p.kills)), -len(p.args)))
        if not left.intersection(best.kills):
            break
        chosen.append(best)
        left -= set(best.kills)
    return chosen


def test_file(proposals: Sequence[Proposal], module: str, names: Sequence[str]) -> str:
    used = sorted({p.function for p in proposals} & set(names))
    return (
        '"""Held-out tests proposed by `scorewright audit`: new inputs, expected values from\n'
        "the reference, each one failing a mutant of the reference that the visible tests\n"
        'pass. Review them before use."""\n\n'
        "import pytest\n"
        f"from {module} import {', '.join(used)}\n\n\n"
        + "\n\n".join(p.source(i) for i, p in enumerate(proposals, 1))
    )
