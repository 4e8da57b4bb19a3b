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

#: Most messages the parent takes from one run unless its plan says fewer: ~1 KB of objects
#: each in every process that handles the run's outcome, and ~16 us of the parent's time
#: each after the run (decode, relay, judge), so a flood of tiny frames (a million fit in the
#: channel's 16 MB) is cut off here. The evaluator plans fewer from the suite's size.
MAX_MESSAGES = 100_000

# -- what the parent sends: the plan of one run -------------------------------------------


@dataclass(frozen=True)
class Mask:
    """Hide ``directory`` behind an empty read-only tmpfs, except for the paths in ``keep``
    (at any depth below it), bound back read-only."""

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
    #: What RLIMIT_NPROC counts for this process (``NPROC_*``), or "" where it bounds nothing
    #: (root, whom the kernel does not count).
    nproc_scope: str = ""
    #: Processes of the same count that are not the candidate's (a user namespace's count
    #: includes its creator and PID 1; the caller's uid's, every process it has), added to
    #: ``limits.processes``.
    nproc_slack: int = 0
    #: In a user namespace of its own, with no other uid to change to: drop every capability.
    drop_caps: bool = False


#: RLIMIT_NPROC counts the processes of: the run's own uid; the run's own user namespace
#: (Linux >= 5.14 counts per user namespace); every process of the caller's uid, whatever
#: runs it (the limit is then the count at the start plus ``limits.processes``).
NPROC_UID, NPROC_USERNS, NPROC_USER = "uid", "user namespace", "user"


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
    #: ``fixed_root``, the path every other path of the spec names (suite/warm_config.py).
    bind_root: str = ""
    fixed_root: str = ""
    #: The suite's initial conftest.py must be loaded before configuring (suite/warm_config.py).
    early_conftests: bool = False
    #: Out-of-process isolation (child/test_process/proxy.py): how the candidate's own process is
    #: confined,
    #: the module names the tests reach it by, what its sys.path gains, and the paths hidden
    #: from it (the tests, the test process's home) where a mount namespace allows.
    candidate: WorkerPlan | None = None
    proxied: tuple[str, ...] = ()
    candidate_path: tuple[str, ...] = ()
    hide: tuple[str, ...] = ()
    #: Most messages the parent takes from this run (protocol/channel.py); past it the
    #: channel is broken and the run ended.
    max_messages: int = MAX_MESSAGES
    #: Not root: a user namespace comes first (kernel/namespaces.py).
    user_namespace: bool = False
    #: ... the one mapped with the caller's subordinate ids, which the process that starts
    #: the run keeps (sandbox/subids.py); ``worker.uid`` is then a uid in it, and
    #: ``hand_over`` the directories given to that uid for the run (and back after it).
    shared_user_namespace: bool = False
    hand_over: tuple[str, ...] = ()
    #: Without namespaces: the run goes in a cgroup of its own below a delegated subtree
    #: (sandbox/cgroups.py), made by the process that starts it.
    cgroup: bool = False
    #: Without namespaces: why (they are refused here, or the caller said namespaces=False).
    why_no_namespaces: str = ""
    #: With namespaces: the work dir as the run sees it, read-only but for ``work_writable``.
    work_root: str = ""
    work_writable: tuple[str, ...] = ()
    #: Top-level modules found in ``extra_path`` before anywhere else (child/shared/imports.py).
    candidate_modules: tuple[str, ...] = ()
    #: With the candidate apart and ``Limits.one_cpu``: the run may be placed on one CPU,
    #: and ``cpu`` is the one the warm parent chose (warm/server.py), None for no placement.
    one_cpu: bool = False
    cpu: int | None = None
    #: Measure which lines of the candidate's own files run (child/shared/coverage_probe.py), in
    #: the process that runs its code.
    coverage: bool = False
    #: The key of fresh-argument rounds' seeds (child/test_process/timed_results.py), hex: one per
    #: Evaluator, so that the reference's rounds and each candidate's get the same arguments,
    #: which no candidate can work out in advance.
    round_key: str = ""
    #: The reference's runs used the benchmark fixture (or there is no reference): each
    #: candidate process is timed, as it starts, for what an item of a call's arguments
    #: costs too (child/test_process/proxy.py), not only for an empty call.
    benchmarks: bool = True
    #: Each test's own (wall, CPU) limits by node id, and every other test's (None: only
    #: the command line's wall limit, no CPU limit); child/test_process/test_clock.py.
    test_limits: Mapping[str, tuple[float, float | None]] = field(default_factory=dict)
    test_limit: tuple[float, float | None] | None = None
    #: Inside gVisor (sandbox/gvisor.py): S gives the run its own network, IPC, UTS and mount
    #: namespaces (a loopback, /tmp and /dev/shm of its own), and is no child subreaper (this
    #: gVisor lets only its first process be one): the run's uid is swept instead.
    gvisor: bool = False


def spec_to_wire(spec: SandboxSpec) -> dict[str, Any]:
    return dataclasses.asdict(spec)


def _plan_from_wire(data: dict[str, Any]) -> WorkerPlan:
    worker = dict(data)
    policy = worker["landlock_policy"]
    worker["limits"] = Limits(**{**worker["limits"], "per_test": None})
    worker["landlock_policy"] = (
        Policy(tuple(policy["readable"]), tuple(policy["writable"]), policy["deny_tcp"])
        if policy
        else None
    )
    return WorkerPlan(**worker)


def _limit_pair(data: Any) -> tuple[float, float | None] | None:
    return (data[0], data[1]) if data else None


def spec_from_wire(data: dict[str, Any]) -> SandboxSpec:
    watch = data["watch"]
    return SandboxSpec(
        worker=_plan_from_wire(data["worker"]),
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
        candidate=_plan_from_wire(data["candidate"]) if data["candidate"] else None,
        proxied=tuple(data["proxied"]),
        candidate_path=tuple(data["candidate_path"]),
        hide=tuple(data["hide"]),
        max_messages=data.get("max_messages", MAX_MESSAGES),
        user_namespace=data.get("user_namespace", False),
        shared_user_namespace=data.get("shared_user_namespace", False),
        hand_over=tuple(data.get("hand_over", ())),
        cgroup=data.get("cgroup", False),
        why_no_namespaces=data.get("why_no_namespaces", ""),
        work_root=data.get("work_root", ""),
        work_writable=tuple(data.get("work_writable", ())),
        candidate_modules=tuple(data.get("candidate_modules", ())),
        one_cpu=data.get("one_cpu", False),
        cpu=data.get("cpu"),
        coverage=data.get("coverage", False),
        round_key=data.get("round_key", ""),
        benchmarks=data.get("benchmarks", True),
        test_limits={k: (v[0], v[1]) for k, v in data.get("test_limits", {}).items()},
        test_limit=_limit_pair(data.get("test_limit")),
        gvisor=data.get("gvisor", False),
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
    #: Why the parent stopped the run before its end, for reasons of its own (the caller
    #: gave up, the warm parent went away): never the candidate's doing.
    stopped: str | None = None


def outcome_to_wire(outcome: ChildOutcome) -> dict[str, Any]:
    # Not dataclasses.asdict: it deep-copies every message, up to MAX_MESSAGES of them.
    return {f.name: getattr(outcome, f.name) for f in dataclasses.fields(outcome)}


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
    #: On a teardown report: the CPU seconds of the whole test (child/test_process/test_clock.py).
    cpu: float | None = None

    @property
    def timed_out(self) -> bool:
        # pytest-timeout fails a test with "Timeout (>Ns) from pytest-timeout." (2.x); the
        # per-test CPU limit with "Timeout (>Ns of CPU) from scorewright"
        # (child/test_process/test_clock.py).
        return self.outcome == "failed" and (
            "from pytest-timeout" in self.message
            or CPU_TIMEOUT_MARK in self.message
            or WALL_TIMEOUT_MARK in self.message
        )

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
_NONE = type(None)


@dataclass(frozen=True)
class MessageKind:
    """A message kind: who sends it, what it means, and its fields' types.

    ``fields`` must be present with one of their types; ``optional`` fields may be absent,
    but when present have one of theirs; ``items`` gives the types every element of a list
    field may have. Types are exact: ``bool`` is never an ``int``. Other fields are allowed
    (and ignored by the verdict). :func:`problem` checks a message against its kind.
    """

    name: str
    sender: str
    meaning: str
    fields: Mapping[str, tuple[type, ...]] = field(default_factory=dict)
    optional: Mapping[str, tuple[type, ...]] = field(default_factory=dict)
    items: Mapping[str, tuple[type, ...]] = field(default_factory=dict)


SANDBOX = "sandbox"
COLLECTED = "collected"
COLLECT_ERROR = "collect_error"
REPORT = "report"
ANCHOR = "anchor"
BENCHMARK = "benchmark"
SUBMIT = "submit"
FINDING = "finding"
CANARY = "canary"
RECHECK = "recheck"
INSTRUMENTED = "instrumented"
FINISH = "finish"
INTERRUPTED = "interrupted"
INTERNAL_ERROR = "internal_error"
CHILD_ERROR = "child_error"
SANDBOX_ERROR = "sandbox_error"
OVERSIZE = "oversize"
CTL = "ctl"
COVERAGE = "coverage"

#: While a run has more timeouts than passes, each later quick test gets the short limits
#: (limits.py SHORT_WALL_S, SHORT_CPU_S): a candidate that hangs more than it works is still
#: scored on every test, each quickly. After this many timeouts, a slower test (limits of
#: its own) gets twice its reference time (child/test_process/test_clock.py).
HANG_EVIDENCE = 2
#: A run stops after this many of its tests time out with none passed (the child's reporter
#: asks pytest to stop, as -x does): a candidate hung on every input it was given. The tests
#: left are ``not_run``, with the reason (integrity/verdict.py).
MAX_TIMEOUTS = 20
#: What the message of a test cut by its CPU limit says (child/test_process/test_clock.py).
CPU_TIMEOUT_MARK = "of CPU) from scorewright's per-test limit"
#: ... and of one cut again by its wall limit, having gone on after its timeout (a subtest
#: or an ``except BaseException`` caught pytest-timeout's, which fires once).
WALL_TIMEOUT_MARK = "of wall time) from scorewright's per-test limit"

#: A fresh-argument benchmark's round prints (child/test_process/timed_results.py) in one message,
#: at most.
MAX_ROUND_PRINTS = 256

#: The warm parent's requests (warm/parent.py asks, warm/server.py answers): run a spec,
#: stop a run; and its one answer, a run done (with its outcome, or an error).
WARM_RUN = "run"
WARM_STOP = "stop"
WARM_DONE = "done"

#: Every kind of message a run sends its parent. The verdict (integrity/verdict.py) has one
#: handler per kind; anything else is a malformed message.
VOCABULARY: Mapping[str, MessageKind] = {
    kind.name: kind
    for kind in (
        MessageKind(
            SANDBOX,
            "worker",
            "the confinement applied; first message only, before any candidate code ran",
            optional={
                "uid": (int, _NONE),
                "nproc": (int, _NONE),
                "landlock_abi": _INT,
                "landlock_tcp": _BOOL,
                "landlock_scoped": _BOOL,
                "nproc_scope": _STR,
                "capabilities": _STR,
            },
        ),
        MessageKind(
            COLLECTED,
            "reporter",
            "a batch of collected test ids and whether each is held out",
            {"ids": _LIST, "heldout": _LIST},
            optional={"cpu_s": _NUMBER},
            items={"ids": _STR, "heldout": _BOOL},
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
            optional={
                "message": _STR,
                "wasxfail": _BOOL,
                "subtest": _BOOL,
                "heldout": _BOOL,
                "cpu": (float, _NONE),
            },
        ),
        MessageKind(
            ANCHOR,
            "scorewright fixture",
            "an anchored value of the running test (scorewright.expect)",
            {"digest": _STR},
            optional={
                "nodeid": _STR,
                "rel": (float, _NONE),
                "abs": (float, _NONE),
                "not_plain": (str, _NONE),
            },
        ),
        MessageKind(
            BENCHMARK,
            "benchmark fixture",
            "the running test's benchmark figures, per call, on the test process's clock "
            "bound before the candidate was imported (child/test_process/bench.py)",
            {
                "rounds": _INT,
                "iterations": _INT,
                "median_s": _NUMBER,
                "min_s": _NUMBER,
                "iqr_s": _NUMBER,
                "mean_s": _NUMBER,
                "stdev_s": _NUMBER,
                "total_s": _NUMBER,
                "overhead_s": _NUMBER,
                "first_s": _NUMBER,
            },
            optional={"nodeid": _STR, "rounds_printed": _LIST, "cpu_total_s": _NUMBER},
            items={"rounds_printed": _STR},
        ),
        MessageKind(
            SUBMIT,
            "scorewright fixture",
            "a value of the running test for a trusted objective to score (scorewright.submit); "
            "its 'value' is tagged JSON of exact builtin values (protocol/values.py, plain)",
            {"name": _STR},
            optional={"nodeid": _STR},
        ),
        MessageKind(
            FINDING,
            "monitor",
            "integrity evidence from the runtime monitor",
            {"code": _STR, "detail": _STR},
        ),
        MessageKind(
            CANARY,
            "monitor",
            "the monitor's answer to the reporter's end-of-test audit event: findings sent "
            "(in all, and in this test), whether it was busy, a digest of its armed state",
            {"sent": _INT, "test_findings": _INT, "busy": _BOOL, "state": _STR},
        ),
        MessageKind(
            RECHECK,
            "trusted test bytecode",
            "a passing assertion's operands, plainly encoded, for the parent to re-check; "
            "``canary``: whether its impossible variant held too (child/test_process/canaries.py)",
            {"site": _STR, "op": _STR, "sides": _LIST},
            optional={"canary": _BOOL},
        ),
        MessageKind(
            INSTRUMENTED,
            "trusted test bytecode",
            "a trusted test module started executing the bytecode the parent made for it",
            {"module": _STR},
        ),
        MessageKind(
            COVERAGE,
            "reporter",
            "the lines of the candidate's files that ran (relative paths; '1-3,7' ranges), "
            "as the process that ran its code measured them: the candidate can forge them",
            {"files": _LIST, "lines": _LIST},
            items={"files": _STR, "lines": _STR},
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
    """Why ``message`` is not a well-formed message of a known kind, or None.

    Types are compared exactly (decoded JSON holds only builtin types), so ``True`` is never
    taken for an ``int``; this runs for every message of a run, so it is kept cheap.
    """
    kind = VOCABULARY.get(message.get("type"))  # type: ignore[arg-type]
    if kind is None:
        return f"an unknown message type {str(message.get('type'))[:40]!r}"
    for name, types in kind.fields.items():
        if type(message.get(name)) not in types:
            return f"a {kind.name} message with a missing or mistyped {name!r}"
    for name, types in kind.optional.items():
        if name in message and type(message[name]) not in types:
            return f"a {kind.name} message with a mistyped {name!r}"
    for name, types in kind.items.items():
        value = message.get(name)
        if type(value) is list and not all(type(item) in types for item in value):
            return f"a {kind.name} message with a mistyped element in {name!r}"
    return None
