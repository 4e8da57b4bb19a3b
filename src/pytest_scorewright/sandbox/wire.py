"""Everything that crosses a process boundary: the types, and the messages as one table.

Three boundaries, all plain data (JSON, never pickle):

- caller → warm parent → job: a :class:`SandboxSpec` (with its :class:`WorkerPlan`,
  :class:`Mask` and :class:`Policy`), and back a :class:`ChildOutcome`;
- sandboxed child → job: framed messages (channel.py) of the kinds in :data:`VOCABULARY`;
- supervisor S → job: ``ctl`` messages on a control pipe.

The child side imports this module; it must stay free of parent-side logic.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_scorewright.limits import Limits

# -- what the parent sends: the plan of one run -------------------------------------------


@dataclass(frozen=True)
class Mask:
    """Hide ``directory`` behind an empty tmpfs, except for the entries in ``keep``."""

    directory: str
    keep: tuple[str, ...]


@dataclass(frozen=True)
class Policy:
    """What Landlock lets the worker read and write, and whether TCP is denied."""

    readable: tuple[str, ...]
    writable: tuple[str, ...]
    deny_tcp: bool


@dataclass(frozen=True)
class WorkerPlan:
    """How the worker (the process that runs pytest) is confined, in order of application."""

    cwd: str
    env: Mapping[str, str]
    limits: Limits
    uid: int | None
    landlock_policy: Policy | None
    landlock_abi: int


@dataclass(frozen=True)
class MonitorPaths:
    """What the runtime monitor needs to tell candidate actions from the suite's."""

    candidate_dir: str
    tests_dir: str
    writable: tuple[str, ...]


@dataclass(frozen=True)
class SandboxSpec:
    """One sandboxed run, as the trusted parent planned it (sandbox/plan.py)."""

    worker: WorkerPlan
    pytest_args: tuple[str, ...]
    extra_path: tuple[str, ...]
    isolate_network: bool
    masks: tuple[Mask, ...] = ()
    stage_dir: str = ""
    use_namespaces: bool = True
    watch: MonitorPaths | None = None
    plugins: tuple[str, ...] = ()
    #: With namespaces: PID 1 bind-mounts ``bind_root`` (the run's work dir) on
    #: ``fixed_root``, the path every other path of the spec names (warm/prepared.py).
    bind_root: str = ""
    fixed_root: str = ""
    #: The suite's initial conftest.py must be loaded before configuring (warm/prepared.py).
    early_conftests: bool = False
    #: Top-level modules found in ``extra_path`` before anywhere else (child/imports.py).
    candidate_modules: tuple[str, ...] = ()


def spec_to_wire(spec: SandboxSpec) -> dict[str, Any]:
    return dataclasses.asdict(spec)


def spec_from_wire(data: dict[str, Any]) -> SandboxSpec:
    worker = dict(data["worker"])
    policy = worker["landlock_policy"]
    worker["limits"] = Limits(**worker["limits"])
    worker["landlock_policy"] = (
        Policy(tuple(policy["readable"]), tuple(policy["writable"]), policy["deny_tcp"])
        if policy
        else None
    )
    watch = data["watch"]
    return SandboxSpec(
        worker=WorkerPlan(**worker),
        pytest_args=tuple(data["pytest_args"]),
        extra_path=tuple(data["extra_path"]),
        isolate_network=data["isolate_network"],
        masks=tuple(Mask(m["directory"], tuple(m["keep"])) for m in data["masks"]),
        stage_dir=data["stage_dir"],
        use_namespaces=data["use_namespaces"],
        watch=MonitorPaths(watch["candidate_dir"], watch["tests_dir"], tuple(watch["writable"]))
        if watch
        else None,
        plugins=tuple(data["plugins"]),
        bind_root=data["bind_root"],
        fixed_root=data["fixed_root"],
        early_conftests=data["early_conftests"],
        candidate_modules=tuple(data.get("candidate_modules", ())),
    )


# -- what comes back: the parent's observation of one run --------------------------------


@dataclass
class ChildOutcome:
    """What the parent observed of one sandboxed run. Messages are (arrival time, message)."""

    messages: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    wall_s: float = 0.0
    cpu_s: float | None = None
    max_rss_mb: float | None = None
    exit_code: int | None = None
    signal: int | None = None
    timed_out: bool = False
    channel_error: str | None = None
    output: str = ""
    output_dropped: int = 0
    isolation: dict[str, Any] = field(default_factory=dict)


def outcome_to_wire(outcome: ChildOutcome) -> dict[str, Any]:
    return dataclasses.asdict(outcome)


def outcome_from_wire(data: dict[str, Any]) -> ChildOutcome:
    data = dict(data)
    data["messages"] = [(float(t), m) for t, m in data["messages"]]
    return ChildOutcome(**data)


# -- the child's messages -------------------------------------------------------------------


@dataclass(frozen=True)
class PhaseReport:
    """One pytest report reduced to what scoring needs (the ``report`` message's fields)."""

    nodeid: str
    when: str
    #: pytest's own outcome word: passed, failed or skipped.
    outcome: str
    duration: float
    message: str = ""
    wasxfail: bool = False
    subtest: bool = False
    heldout: bool = False

    @property
    def timed_out(self) -> bool:
        # pytest-timeout fails a test with "Timeout (>Ns) from pytest-timeout." (2.x).
        return self.outcome == "failed" and "from pytest-timeout" in self.message

    def to_wire(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class Anchor:
    """One anchored value (``scorewright.expect``), as the ``anchor`` message carries it."""

    value: Any  # tagged JSON, or None when only the digest travelled
    digest: str
    rel: float | None = None
    abs: float | None = None
    not_plain: str | None = None

    def to_wire(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_wire(cls, message: Mapping[str, Any]) -> Anchor | None:
        digest, not_plain = message.get("digest"), message.get("not_plain")
        rel, tol = message.get("rel"), message.get("abs")
        if not isinstance(digest, str) or not (not_plain is None or isinstance(not_plain, str)):
            return None
        if not all(t is None or (isinstance(t, float) and math.isfinite(t)) for t in (rel, tol)):
            return None
        return cls(message.get("value"), digest, rel, tol, not_plain)


_STR, _INT, _BOOL, _LIST = (str,), (int,), (bool,), (list,)
_NUMBER = (int, float)


@dataclass(frozen=True)
class MessageKind:
    """A message kind: who sends it, what it means, and its required fields' types."""

    name: str
    sender: str
    meaning: str
    fields: Mapping[str, tuple[type, ...]] = field(default_factory=dict)


SANDBOX = "sandbox"
COLLECTED = "collected"
COLLECT_ERROR = "collect_error"
REPORT = "report"
ANCHOR = "anchor"
FINDING = "finding"
FINISH = "finish"
INTERRUPTED = "interrupted"
INTERNAL_ERROR = "internal_error"
CHILD_ERROR = "child_error"
SANDBOX_ERROR = "sandbox_error"
OVERSIZE = "oversize"
CTL = "ctl"

#: Every kind of message a run sends its parent. The verdict (integrity/verdict.py) has one
#: handler per kind; anything else is a malformed message.
VOCABULARY: Mapping[str, MessageKind] = {
    kind.name: kind
    for kind in (
        MessageKind(
            SANDBOX,
            "worker",
            "the confinement applied; first message only, before any candidate code ran",
        ),
        MessageKind(
            COLLECTED,
            "reporter",
            "a batch of collected test ids and whether each is held out",
            {"ids": _LIST, "heldout": _LIST},
        ),
        MessageKind(
            COLLECT_ERROR,
            "reporter",
            "a test file could not be collected",
            {"nodeid": _STR, "message": _STR},
        ),
        MessageKind(
            REPORT,
            "reporter",
            "one phase (setup, call, teardown) of a test, or one subtest",
            {"nodeid": _STR, "when": _STR, "outcome": _STR, "duration": _NUMBER},
        ),
        MessageKind(
            ANCHOR,
            "scorewright fixture",
            "an anchored value of the running test (scorewright.expect)",
            {"digest": _STR},
        ),
        MessageKind(
            FINDING,
            "monitor",
            "integrity evidence from the runtime monitor",
            {"code": _STR, "detail": _STR},
        ),
        MessageKind(FINISH, "reporter", "pytest finished the session", {"exitstatus": _INT}),
        MessageKind(
            INTERRUPTED, "reporter", "KeyboardInterrupt or pytest.exit()", {"reason": _STR}
        ),
        MessageKind(INTERNAL_ERROR, "reporter", "pytest's INTERNALERROR", {"reason": _STR}),
        MessageKind(CHILD_ERROR, "runner", "pytest could not run at all", {"reason": _STR}),
        MessageKind(
            SANDBOX_ERROR, "PID 1 or worker", "the sandbox could not be set up", {"reason": _STR}
        ),
        MessageKind(OVERSIZE, "channel", "a message too large to send", {"of": _STR}),
        MessageKind(CTL, "supervisor S", "process layout, on the control pipe only"),
    )
}


def problem(message: Mapping[str, Any]) -> str | None:
    """Why ``message`` is not a well-formed message of a known kind, or None."""
    kind = VOCABULARY.get(message.get("type"))  # type: ignore[arg-type]
    if kind is None:
        return f"an unknown message type {str(message.get('type'))[:40]!r}"
    for name, types in kind.fields.items():
        value = message.get(name)
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            return f"a {kind.name} message with a missing or mistyped {name!r}"
    return None
