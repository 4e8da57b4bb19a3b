"""The trusted collection: which tests a suite has, learned once, from a run of the reference
(or of a stand-in module), never from a candidate's run."""

from __future__ import annotations

from pathlib import Path

from pytest_scorewright.errors import ConfigError
from pytest_scorewright.protocol import wire
from pytest_scorewright.protocol.wire import ChildOutcome

#: Stands in for the candidate while the trusted suite is collected without a reference.
STUB = '''"""Collection stub: stands in for the candidate while the trusted suite is collected."""


class _Anything:
    def __call__(self, *args, **kwargs):
        return self

    def __getattr__(self, name):
        return self


def __getattr__(name):
    return _Anything()
'''


def expected_ids(
    tests: Path, observed: ChildOutcome, *, all_heldout: bool, what: str
) -> list[tuple[str, bool]]:
    """The (node id, held out) pairs a ``--collect-only`` run of ``tests`` reported; a
    one-line ConfigError when the suite cannot be collected with ``what``."""
    ids: list[tuple[str, bool]] = []
    problems: list[str] = []
    for _, message in observed.messages:
        kind = message.get("type")
        if kind == wire.COLLECTED:
            ids += zip(message["ids"], message["heldout"], strict=True)
        elif kind == wire.COLLECT_ERROR:
            last = str(message.get("message", "")).strip().splitlines() or [""]
            problems.append(f"{message.get('nodeid')}: {last[-1]}")
        elif kind in (wire.SANDBOX_ERROR, wire.CHILD_ERROR, wire.INTERNAL_ERROR):
            problems.append(str(message.get("reason")))
    if problems:
        raise ConfigError(f"the tests in {tests} could not be collected with {what}: {problems[0]}")
    if observed.timed_out:
        raise ConfigError(f"collecting the tests in {tests} timed out; raise the timeout")
    if not ids:
        raise ConfigError(f"no tests were collected from {tests}; check the directory")
    return [(nodeid, heldout or all_heldout) for nodeid, heldout in ids]
