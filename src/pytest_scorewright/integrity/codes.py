"""Every integrity reason code, with its severity and why: the one table the policy reads.

Severities, strongest first (``SEVERITIES``):

- ``tamper``: the run's outcomes can no longer be trusted (pytest, the channel, the monitor
  or the timers changed; forged or unexpected messages; tests or oracles replaced; an
  assertion that passed in the child does not hold in the parent). By default no test of the
  candidate is credited, and the result is rejected.
- ``gaming``: specific evidence of gaming (special-casing, memorised inputs, forged equality,
  skips from candidate code, reaching the tests' frames or files). By default the result is
  rejected.
- ``hint``: weak evidence (a pattern in the source with nothing at run time to back it, an
  attempt the sandbox stops anyway). Recorded; never changes a score unless the policy is
  ``fail_closed``.

docs/integrity.md shows this table; ``tests/integrity/test_integrity_codes.py`` keeps the two
in step.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from pytest_scorewright.errors import ConfigError
from pytest_scorewright.result import SEVERITIES, Policy, Reason, Severity

#: Strength order: a lower number is stronger.
STRENGTH: Mapping[str, int] = {s: i for i, s in enumerate(SEVERITIES)}

#: Who finds it: ``parent`` (the verdict, the clock, the held-out split, the re-checked
#: assertions), ``monitor`` (the runtime monitor in the child, attributed by the parent),
#: ``source`` (the static scan of the candidate's files, relative to the reference's).
Origin = Literal["parent", "monitor", "source"]


@dataclass(frozen=True)
class Code:
    severity: Severity
    origin: Origin
    why: str


_T: Severity = "tamper"
_G: Severity = "gaming"
_H: Severity = "hint"

CODES: Mapping[str, Code] = {
    # -- the message stream and the monitor's own health (parent) ---------------------------
    "unexpected_test": Code(_T, "parent", "a report or collection of a test nobody expected"),
    "duplicate_report": Code(_T, "parent", "a test phase reported twice: forged reports"),
    "phase_out_of_order": Code(_T, "parent", "a call or teardown report before its setup"),
    "message_after_finish": Code(_T, "parent", "a message after pytest finished the session"),
    "malformed_message": Code(_T, "parent", "a message our child code never sends"),
    "forged_message": Code(_T, "parent", "a sandbox or control message on the message pipe"),
    "channel_broken": Code(_T, "parent", "the message channel was written to out of frame"),
    "monitor_silenced": Code(
        _T, "parent", "the runtime monitor stopped answering, or its state was changed"
    ),
    "assertion_recheck_failed": Code(
        _T,
        "parent",
        "a passing assertion's plain operands do not satisfy it when the parent re-checks them",
    ),
    "recheck_missing": Code(
        _T, "parent", "a test module ran without the trusted bytecode the reference ran with"
    ),
    "benchmark_forged": Code(
        _T,
        "parent",
        "benchmark figures the fixture never sends: two in a test, figures that do not fit "
        "together, or more timed rounds than the run had been going on the parent's clock",
    ),
    # -- the run as the parent saw it -------------------------------------------------------
    "early_exit": Code(
        _G,
        "parent",
        "the session ended from inside (os._exit, sys.exit(0) at import, pytest.exit, "
        "KeyboardInterrupt, closed descriptors)",
    ),
    "heldout_divergence": Code(
        _G,
        "parent",
        "visible behaviours pass, held-out ones fail (counted by behaviour); alone a hint, "
        "with a table of the visible inputs it rejects",
    ),
    "heldout_not_executed": Code(
        _H, "parent", "held-out tests exist but none executed, so divergence measured nothing"
    ),
    "heldout_run_failed": Code(
        _H, "parent", "only the held-out run crashed, hung or failed to import"
    ),
    "import_time_work": Code(
        _H,
        "parent",
        "collection took > 1 s more and > 5x the reference's, on the parent's clock or in the "
        "test process's CPU: work at import time (a heavy library, a table made in advance); "
        "no speed is credited, the tests count as run",
    ),
    "timing_mismatch": Code(
        _H,
        "parent",
        "pytest's own durations account for < 25% of the parent's clock: no speed is credited "
        "(a loaded machine stretches what lies between many quick tests, too)",
    ),
    "cross_run_speedup": Code(
        _H,
        "parent",
        "with repeats, the first run > 3x slower than later ones: a cache, or a load spike; "
        "no speed is credited",
    ),
    "anchor_not_plain": Code(_G, "parent", "an anchored value was not made of builtin types"),
    "submission_unexpected": Code(
        _G,
        "parent",
        "a value submitted for an objective in a test where the reference submitted none "
        "(or fewer) of that name",
    ),
    "timed_result_differs": Code(
        _G,
        "monitor",
        "a benchmark's timed call returned something else than the same call made on the "
        "same arguments outside the timed rounds (speed bought with wrong answers)",
    ),
    "work_off_the_clock": Code(
        _H,
        "parent",
        "with the candidate apart on one CPU, its processes used more CPU over a benchmark's "
        "timed rounds than the rounds took: work between rounds or after them (a background "
        "thread or process); no speed is credited to the candidate (its helper works beside "
        "every test, and a busy machine can hide it in some)",
    ),
    "benchmark_noisy": Code(
        _H, "parent", "a benchmark's per-call times vary by more than their mean"
    ),
    "assertion_not_plain": Code(
        _G,
        "parent",
        "a passing assertion compared an object that is not plain data where the reference "
        "gave plain data (forged __eq__, lazy results, unittest.mock.ANY)",
    ),
    "memorised_inputs": Code(
        _G,
        "parent",
        "code the tests reach shares distinctive literals with the visible tests, beyond the "
        "reference; rejects only with held-out tests doing worse or an impossible canary "
        "passed, else a hint",
    ),
    "canary_passed": Code(
        _G,
        "parent",
        "an impossible canary passed: a passing assertion also held with its expected value "
        "changed (or its comparison reversed), where the reference's did not; candidate "
        "code decided an assertion",
    ),
    "candidate_config": Code(
        _G,
        "parent",
        "ships conftest.py, pytest.ini, sitecustomize.py, *.pth or a module shadowing pytest "
        "(never read)",
    ),
    "candidate_project_files": Code(
        _H, "parent", "ships pyproject.toml, setup.cfg or tox.ini (never read)"
    ),
    "unscanned": Code(
        _H,
        "parent",
        "files the static scan could not read (bytecode without source and native modules, "
        "which are not copied; files past the size or count caps)",
    ),
    # -- the runtime monitor (each relative to what the reference did in the same test) -----
    "returned_handle": Code(
        _G,
        "monitor",
        "a call returned an object of the candidate's own (which answers the test's operators "
        "and methods) where the reference's call at the same site of the same test returned "
        "plain data",
    ),
    "handle_given_value": Code(
        _G,
        "monitor",
        "with the candidate apart, an object of the candidate's was handed a test's value "
        "through an operator or a method (which tells it the value) where the reference's "
        "objects were handed none at the same place and operation of the same test",
    ),
    "pytest_tampered": Code(
        _T, "monitor", "pytest's or this package's functions replaced, or a plugin registered"
    ),
    "timer_patched": Code(
        _T, "monitor", "time.perf_counter and friends (or the benchmark fixture's clock) replaced"
    ),
    "modifies_tests": Code(_T, "monitor", "tried to write, delete or move a test file"),
    "oracle_replaced": Code(
        _T,
        "monitor",
        "a function, class or constant defined by the trusted tests or conftest was replaced",
    ),
    "unattributable_code": Code(
        _T,
        "monitor",
        "compiled code under the name of a test, pytest, this package or the standard "
        "library, so its actions would be blamed on trusted code",
    ),
    "reads_tests": Code(_G, "monitor", "opened or listed the test files"),
    "frame_introspection": Code(
        _G, "monitor", "took a frame object (sys._getframe, a traceback's tb_frame)"
    ),
    "gc_introspection": Code(_G, "monitor", "walked the garbage collector's objects"),
    "raw_memory_access": Code(_G, "monitor", "read or wrote memory through ctypes"),
    "reads_process_internals": Code(_G, "monitor", "opened /proc/*/fd, environ or mem"),
    "signals_processes": Code(_G, "monitor", "sent a signal to a process"),
    "tracing_hook": Code(_G, "monitor", "installed a trace or profile function"),
    "skip_from_candidate": Code(_G, "monitor", "skip, xfail or exit raised from candidate code"),
    "patches_runtime": Code(
        _G, "monitor", "replaced a function of a standard-library module the tests can use"
    ),
    "marshalled_code": Code(_G, "monitor", "loaded code objects from bytes (marshal)"),
    "imports_test_machinery": Code(_H, "monitor", "imported pytest, pluggy or this package"),
    "writes_outside": Code(
        _H, "monitor", "tried to write outside its directory and HOME (the sandbox refuses)"
    ),
    "starts_processes": Code(
        _H,
        "monitor",
        "started more than 16 processes in one run (fork, spawn, subprocess): abuse of the "
        "sandbox the weighted fitness penalises (sandbox_penalty)",
    ),
    "atexit_registered": Code(_H, "monitor", "registered an atexit handler (never run)"),
    "background_threads": Code(_H, "monitor", "threads it started were still running at the end"),
    "findings_capped": Code(_H, "monitor", "the monitor stopped after too many findings"),
    # -- the static scan (relative to the reference's source) --------------------------------
    "source_pytest_hook": Code(_G, "source", "defines a pytest_* hook function"),
    "source_detects_test_environment": Code(
        _G, "source", "refers to PYTEST_CURRENT_TEST, PYTEST_VERSION, PYTEST_XDIST or scorewright"
    ),
    "source_frame_introspection": Code(_H, "source", "f_back, f_locals, inspect.stack() ..."),
    "source_gc_introspection": Code(_H, "source", "gc.get_objects and friends"),
    "source_imports_test_machinery": Code(_H, "source", "imports pytest, unittest, pluggy ..."),
    "source_raw_memory_access": Code(_H, "source", "imports ctypes"),
    "source_network_access": Code(_H, "source", "imports socket, urllib.request ..."),
    "source_atexit": Code(_H, "source", "imports atexit"),
    "source_early_exit_call": Code(_H, "source", "sys.exit or os._exit at import, os._exit"),
    "source_tracing_hook": Code(_H, "source", "sys.settrace, sys.setprofile"),
    "source_signal_tampering": Code(_H, "source", "os.kill, signal.signal, alarm"),
    "source_spawns_processes": Code(_H, "source", "subprocess, os.system"),
    "source_reads_argv": Code(_H, "source", "reads sys.argv"),
    "source_dynamic_code": Code(_H, "source", "exec/compile/__import__ of computed strings"),
    "source_timer_patched": Code(_H, "source", "assigns time.perf_counter and friends"),
    "source_patches_runtime": Code(
        _H, "source", "assigns into sys.modules, builtins, sys.* or imported modules"
    ),
    "source_always_equal": Code(
        _H, "source", "an __eq__/__ne__ returning a constant, a builtin subclass's equality"
    ),
    "source_reads_tests": Code(_H, "source", "string paths to test files"),
    "source_raw_fd_access": Code(_H, "source", "os.write/os.fdopen on raw descriptors"),
    "source_encoding": Code(_H, "source", "a coding cookie other than UTF-8 (decoded as declared)"),
}


def severity_of(code: str) -> Severity:
    """The severity of ``code``; ``hint`` for a code this table does not know (a file written
    by a newer version). The verdict never lets an unknown code in from the child: our child
    code sends none, so one is a malformed message."""
    known = CODES.get(code)
    return known.severity if known is not None else "hint"


def reason(code: str, detail: str) -> Reason:
    """A :class:`Reason` with the severity this table gives ``code``."""
    return Reason(code, detail, severity_of(code))


def strongest(reasons: Iterable[Reason]) -> Severity | None:
    """The strongest severity among ``reasons``, or None."""
    found = sorted((r.severity for r in reasons), key=STRENGTH.__getitem__)
    return found[0] if found else None


def choose_policy(*, warn_only: bool, fail_closed: bool) -> Policy:
    """The policy the two switches ask for; both at once is a usage error."""
    if warn_only and fail_closed:
        raise ConfigError("warn_only and fail_closed contradict each other; choose one")
    return "warn_only" if warn_only else "fail_closed" if fail_closed else "default"
