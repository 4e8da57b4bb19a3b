"""The ScoreResult: the versioned JSON document every part of scorewright produces or reads.

Example::

    from pytest_scorewright import ScoreResult

    result = ScoreResult.read("fitness.json")
    if result.ok:
        print(result.signal("pass_rate"))

Measurement and judgement stay apart: a ScoreResult carries measured ``signals`` and per-test
records, never a fitness value. A signal that could not be measured is absent, never invented.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast, get_args

from pytest_scorewright.errors import OutputPathError, ResultFormatError

# Format history (bump on any change a reader could trip on):
# 1: first version: ok/error, signals, tests, integrity, limits, environment, collection_errors.
# 2: `infrastructure` (an error that is ours or the machine's, not the candidate's).
#    + integrity.reasons[].severity: tamper, gaming or hint (a reason without one: hint)
#    + integrity.policy: default, warn_only or fail_closed (without one: warn_only)
#    + tests[].credited: false when tamper evidence withdrew the test's credit
#    + tests[].outcome not_applicable: a test the reference skips or xfails (or fails, baseline)
#    + tests[].reference_outcome: the reference's own outcome of a not_applicable test
#    + limits.test_timeout_s: the per-test limit in force (pytest-timeout), 0 for none
#    + tests[].benchmark: the benchmark fixture's figures per call (median_s, min_s, ...)
#    + objectives: each objective's value from submitted values, or why it has none
# 3: a rejected result's signals include what its runs measured, credit aside: as_run_*
#    (tests_passed, pass_rate, visible_pass_rate, heldout_pass_rate, heldout_divergence)
#    + tests[].cpu_s: the test's CPU seconds; limits.per_test: each test's own limits
SCHEMA_VERSION = 3
#: Versions this code reads (fields a version lacks take their defaults).
READABLE_VERSIONS = (1, 2, 3)

Outcome = Literal[
    "passed",
    "failed",
    "error",
    "skipped",
    "xfailed",
    "xpassed",
    "timeout",
    "not_run",
    "not_applicable",
]
OUTCOMES: tuple[Outcome, ...] = get_args(Outcome)
Phase = Literal["collect", "setup", "call", "teardown"]
PHASES: tuple[Phase, ...] = ("collect", "setup", "call", "teardown")
Mode = Literal["plugin", "evaluator"]
#: How strong a piece of integrity evidence is (integrity/codes.py): ``tamper`` (the run's
#: outcomes cannot be trusted), ``gaming`` (specific evidence of gaming), ``hint`` (weak).
Severity = Literal["tamper", "gaming", "hint"]
SEVERITIES: tuple[Severity, ...] = ("tamper", "gaming", "hint")
#: What the evidence does to the score (docs/integrity.md): ``default`` (tamper: no test
#: credited, and rejected; gaming: rejected), ``warn_only`` (recorded only), ``fail_closed``
#: (any evidence, hints included, rejects).
Policy = Literal["default", "warn_only", "fail_closed"]
POLICIES: tuple[Policy, ...] = ("default", "warn_only", "fail_closed")

#: Longest per-test message kept, in characters; longer ones are cut in the middle.
MESSAGE_LIMIT = 2048


@dataclass(frozen=True)
class Signal:
    """One measured number, e.g. ``Signal("pass_rate", 0.75, "ratio", True)``."""

    name: str
    value: float
    unit: str
    #: None where neither direction is better (a count of collected tests).
    higher_is_better: bool | None


@dataclass(frozen=True)
class Benchmark:
    """A test's benchmark figures, per call of the benchmarked function
    (child/test_process/bench.py):
    round trips to the candidate's process already subtracted (``overhead_s`` per call)."""

    median_s: float
    min_s: float
    iqr_s: float
    rounds: int
    iterations: int = 1
    overhead_s: float = 0.0
    #: The first call's time, where every round has the same arguments (0: fresh ones).
    first_s: float = 0.0
    #: CPU seconds per call of the candidate's process tree over the timed rounds (with the
    #: candidate apart, on one CPU; None where not measured): work off the clock shows here.
    cpu_s: float | None = None


@dataclass(frozen=True)
class TestRecord:
    """What happened to one collected test node."""

    __test__ = False  # not a pytest test class, despite the name

    nodeid: str
    outcome: Outcome
    #: The phase in which the outcome was decided; None for a test that never ran.
    phase: Phase | None
    heldout: bool
    duration_s: float | None
    message: str | None = None
    #: Counts of subtest outcomes by kind, when the test had subtests.
    subtests: Mapping[str, int] | None = None
    #: False when tamper evidence withdrew the credit: ``outcome`` is what the run reported,
    #: but the test does not count as passed (integrity policy ``default``/``fail_closed``).
    credited: bool = True
    #: For a ``not_applicable`` test: what the reference's run of it was (scoring/applicable.py).
    reference_outcome: Outcome | None = None
    #: The benchmark fixture's figures, when the test used it.
    benchmark: Benchmark | None = None
    #: CPU seconds the test took (setup, call, teardown): the test process's and the
    #: candidate's process tree's, as the run's child measured them; None for a quick test
    #: (under a few hundredths of a second) or where they could not be read.
    cpu_s: float | None = None

    @property
    def passed(self) -> bool:
        """Passed and credited: the only thing any pass count or rate counts."""
        return self.outcome == "passed" and self.credited

    @property
    def applicable(self) -> bool:
        """False for a test the reference skips or xfails (or fails, as a baseline): it is
        in no pass-rate denominator."""
        return self.outcome != "not_applicable"


@dataclass(frozen=True)
class Reason:
    """A stable machine-readable ``code``, a one-line ``detail`` a person can read, and how
    strong the evidence is (integrity/codes.py gives every code its severity)."""

    code: str
    detail: str
    severity: Severity = "hint"


@dataclass(frozen=True)
class Integrity:
    #: At least one reason of severity ``tamper`` or ``gaming`` (hints alone never flag).
    flagged: bool = False
    reasons: tuple[Reason, ...] = ()
    #: The policy rejected the result: fitness functions give it the reject value.
    rejected: bool = False
    policy: Policy = "default"


@dataclass(frozen=True)
class CollectionError:
    nodeid: str
    message: str


@dataclass(frozen=True)
class ObjectiveResult:
    """One objective (``--objective NAME=PATH:FUNCTION``): the value its trusted function gave
    the submitted values (the mean when several were), or None with the ``error`` that says
    why; the signal ``objective_<name>`` carries the same value."""

    name: str
    value: float | None
    higher_is_better: bool
    #: Submitted values scored (from credited tests only).
    submissions: int
    error: str | None = None


@dataclass(frozen=True)
class ScoreResult:
    """A scored test run. Build one with :func:`pytest_scorewright.results.measure.build_result`."""

    ok: bool
    error: str | None
    mode: Mode
    signals: tuple[Signal, ...]
    tests: tuple[TestRecord, ...]
    integrity: Integrity
    environment: Mapping[str, str]
    limits: Mapping[str, Any] | None = None
    collection_errors: tuple[CollectionError, ...] = ()
    #: The error is ours or the machine's (the warm parent died, a worker was lost, the
    #: sandbox could not start), not the candidate's: a loop should retry, not score it.
    infrastructure: bool = False
    schema_version: int = SCHEMA_VERSION
    extra: Mapping[str, Any] = field(default_factory=dict)
    objectives: tuple[ObjectiveResult, ...] = ()

    def signal(self, name: str) -> float | None:
        """The value of signal ``name``, or None when it was not measured."""
        for s in self.signals:
            if s.name == name:
                return s.value
        return None

    # -- serialisation ---------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": self.schema_version,
            "ok": self.ok,
            "error": self.error,
            "infrastructure": self.infrastructure,
            "mode": self.mode,
            "signals": [
                {
                    "name": s.name,
                    "value": s.value,
                    "unit": s.unit,
                    "higher_is_better": s.higher_is_better,
                }
                for s in self.signals
            ],
            "tests": [_test_to_dict(t) for t in self.tests],
            "collection_errors": [
                {"nodeid": c.nodeid, "message": c.message} for c in self.collection_errors
            ],
            "integrity": {
                "flagged": self.integrity.flagged,
                "rejected": self.integrity.rejected,
                "policy": self.integrity.policy,
                "reasons": [
                    {"code": r.code, "severity": r.severity, "detail": r.detail}
                    for r in self.integrity.reasons
                ],
            },
            "limits": dict(self.limits) if self.limits is not None else None,
            "environment": dict(self.environment),
            **(
                {"objectives": [_objective_to_dict(o) for o in self.objectives]}
                if self.objectives
                else {}
            ),
            **({"extra": dict(self.extra)} if self.extra else {}),
        }

    def to_json(self) -> str:
        # allow_nan=False: a NaN or infinity must never reach a reader as a score.
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False, allow_nan=False) + "\n"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ScoreResult:
        try:
            return _from_dict(data)
        except (KeyError, TypeError, ValueError) as exc:
            raise ResultFormatError(f"not a valid ScoreResult: {_describe(exc)}") from None

    @classmethod
    def from_json(cls, text: str | bytes) -> ScoreResult:
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise ResultFormatError(f"not a ScoreResult: invalid JSON ({exc})") from None
        if not isinstance(data, dict):
            raise ResultFormatError("not a ScoreResult: the JSON document is not an object")
        return cls.from_dict(data)

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> ScoreResult:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ResultFormatError(f"cannot read {os.fspath(path)!r}: {exc.strerror}") from None
        try:
            return cls.from_json(text)
        except ResultFormatError as exc:
            raise ResultFormatError(f"{os.fspath(path)}: {exc}") from None

    def write(self, path: str | os.PathLike[str]) -> Path:
        """Write the JSON atomically (temp file in the same directory, then rename)."""
        return write_atomic(path, self.to_json())


def write_atomic(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` to ``path`` so that a reader sees the old file or the whole new one."""
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as exc:
        raise OutputPathError(_unwritable(target, exc)) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        # mkstemp makes the file 0600; give it the mode an ordinary open() would.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, target)
    except BaseException as exc:  # Ctrl-C mid-write, too: no half-written file stays behind
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise OutputPathError(_unwritable(target, exc)) from None
        raise
    return target


def check_writable(path: str | os.PathLike[str]) -> Path:
    """Fail now, with a one-line reason, if ``path`` could not be written later."""
    target = Path(path)
    if target.is_dir():
        raise OutputPathError(
            f"cannot write the result to {os.fspath(target)!r}: it is a directory; "
            "give a file path such as fitness.json"
        )
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".probe")
    except OSError as exc:
        raise OutputPathError(_unwritable(target, exc)) from None
    os.close(fd)
    os.unlink(tmp)
    return target


def _unwritable(target: Path, exc: OSError) -> str:
    reason = exc.strerror or type(exc).__name__
    return (
        f"cannot write the result to {os.fspath(target)!r}: {reason}; "
        "choose a path in a writable directory"
    )


def _test_to_dict(t: TestRecord) -> dict[str, Any]:
    d: dict[str, Any] = {
        "nodeid": t.nodeid,
        "outcome": t.outcome,
        "phase": t.phase,
        "heldout": t.heldout,
        "duration_s": t.duration_s,
        "message": t.message,
    }
    if t.subtests is not None:
        d["subtests"] = dict(t.subtests)
    d["credited"] = t.credited
    if t.reference_outcome is not None:
        d["reference_outcome"] = t.reference_outcome
    if t.cpu_s is not None:
        d["cpu_s"] = t.cpu_s
    if t.benchmark is not None:
        b = t.benchmark
        d["benchmark"] = {
            "median_s": b.median_s,
            "min_s": b.min_s,
            "iqr_s": b.iqr_s,
            "rounds": b.rounds,
            "iterations": b.iterations,
            "overhead_s": b.overhead_s,
            "first_s": b.first_s,
        }
        if b.cpu_s is not None:
            d["benchmark"]["cpu_s"] = b.cpu_s
    return d


def _objective_to_dict(o: ObjectiveResult) -> dict[str, Any]:
    return {
        "name": o.name,
        "value": o.value,
        "higher_is_better": o.higher_is_better,
        "submissions": o.submissions,
        "error": o.error,
    }


def _benchmark_from(data: Any) -> Benchmark | None:
    if data is None:
        return None
    b = _expect(data, dict, "benchmark")
    return Benchmark(
        median_s=_number(b["median_s"], "benchmark median_s"),
        min_s=_number(b["min_s"], "benchmark min_s"),
        iqr_s=_number(b["iqr_s"], "benchmark iqr_s"),
        rounds=_expect(b["rounds"], int, "benchmark rounds"),
        iterations=_expect(b.get("iterations", 1), int, "benchmark iterations"),
        overhead_s=_number(b.get("overhead_s", 0.0), "benchmark overhead_s"),
        first_s=_number(b.get("first_s", 0.0), "benchmark first_s"),
        cpu_s=_number(b["cpu_s"], "benchmark cpu_s") if b.get("cpu_s") is not None else None,
    )


def _objective_from(o: Any) -> ObjectiveResult:
    o = _expect(o, dict, "objective")
    value = o.get("value")
    return ObjectiveResult(
        name=_expect(o["name"], str, "objective name"),
        value=None if value is None else _number(value, f"objective {o['name']!r}"),
        higher_is_better=_expect(o["higher_is_better"], bool, "objective higher_is_better"),
        submissions=_expect(o.get("submissions", 0), int, "objective submissions"),
        error=_expect(o.get("error"), (str, type(None)), "objective error"),
    )


def _describe(exc: Exception) -> str:
    if isinstance(exc, KeyError):
        return f"missing key {exc.args[0]!r}"
    return str(exc)


def _expect(value: Any, kind: type | tuple[type, ...], what: str) -> Any:
    if not isinstance(value, kind) or (isinstance(value, bool) and bool not in _kinds(kind)):
        raise TypeError(f"{what} has the wrong type ({type(value).__name__})")
    return value


def _kinds(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _number(value: Any, what: str) -> float:
    v = float(_expect(value, (int, float), what))
    if not math.isfinite(v):
        raise ValueError(f"{what} is not a finite number")
    return v


def _choice(value: Any, allowed: Sequence[str], what: str) -> str:
    if value not in allowed:
        raise ValueError(f"{what} is {value!r}, not one of {', '.join(allowed)}")
    return cast(str, value)


def _from_dict(d: Mapping[str, Any]) -> ScoreResult:
    version = d["schema_version"]
    if version not in READABLE_VERSIONS or isinstance(version, bool):
        raise ValueError(
            f"schema_version {version!r} is not supported (this is version {SCHEMA_VERSION}); "
            "upgrade pytest-scorewright to read it"
        )
    signals = tuple(
        Signal(
            name=_expect(s["name"], str, "signal name"),
            value=_number(s["value"], f"signal {s['name']!r}"),
            unit=_expect(s["unit"], str, "signal unit"),
            higher_is_better=_expect(s["higher_is_better"], (bool, type(None)), "higher_is_better"),
        )
        for s in _expect(d["signals"], list, "signals")
    )
    tests = tuple(
        TestRecord(
            nodeid=_expect(t["nodeid"], str, "nodeid"),
            outcome=cast(Outcome, _choice(t["outcome"], OUTCOMES, "outcome")),
            phase=cast(Phase, _choice(t["phase"], PHASES, "phase")) if t["phase"] else None,
            heldout=_expect(t["heldout"], bool, "heldout"),
            duration_s=None if t["duration_s"] is None else _number(t["duration_s"], "duration_s"),
            message=_expect(t.get("message"), (str, type(None)), "message"),
            subtests=_expect(t.get("subtests"), (dict, type(None)), "subtests"),
            credited=_expect(t.get("credited", True), bool, "credited"),
            reference_outcome=(
                cast(Outcome, _choice(t["reference_outcome"], OUTCOMES, "reference_outcome"))
                if t.get("reference_outcome") is not None
                else None
            ),
            benchmark=_benchmark_from(t.get("benchmark")),
            cpu_s=None if t.get("cpu_s") is None else _number(t["cpu_s"], "cpu_s"),
        )
        for t in _expect(d["tests"], list, "tests")
    )
    integ = _expect(d["integrity"], dict, "integrity")
    integrity = Integrity(
        flagged=_expect(integ["flagged"], bool, "integrity.flagged"),
        reasons=tuple(
            Reason(
                _expect(r["code"], str, "reason code"),
                _expect(r["detail"], str, "detail"),
                cast(Severity, _choice(r.get("severity", "hint"), SEVERITIES, "severity")),
            )
            for r in _expect(integ["reasons"], list, "integrity.reasons")
        ),
        rejected=_expect(integ.get("rejected", False), bool, "integrity.rejected"),
        # Files from before policies were recorded were scored warn-only.
        policy=cast(Policy, _choice(integ.get("policy", "warn_only"), POLICIES, "policy")),
    )
    return ScoreResult(
        ok=_expect(d["ok"], bool, "ok"),
        error=_expect(d["error"], (str, type(None)), "error"),
        mode=cast(Mode, _choice(d["mode"], ("plugin", "evaluator"), "mode")),
        signals=signals,
        tests=tests,
        integrity=integrity,
        environment=_expect(d["environment"], dict, "environment"),
        limits=_expect(d["limits"], (dict, type(None)), "limits"),
        collection_errors=tuple(
            CollectionError(_expect(c["nodeid"], str, "nodeid"), _expect(c["message"], str, "m"))
            for c in _expect(d.get("collection_errors", []), list, "collection_errors")
        ),
        infrastructure=_expect(d.get("infrastructure", False), bool, "infrastructure"),
        schema_version=SCHEMA_VERSION,
        extra=_expect(d.get("extra", {}), dict, "extra"),
        objectives=tuple(
            _objective_from(o) for o in _expect(d.get("objectives", []), list, "objectives")
        ),
    )
