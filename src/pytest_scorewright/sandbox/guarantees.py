"""The sandbox's guarantees, by name: which hold for a run, and why one does not.

One function decides, from the facts of a run (planned before it, or observed after it), so
that what ``require_isolation`` refuses and what ``limits.sandbox`` records cannot disagree.
docs/sandbox.md has the table of modes, each cell with the test that shows it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_scorewright.errors import ConfigError
from pytest_scorewright.protocol.wire import NPROC_UID, NPROC_USERNS

#: Every guarantee, and what it promises.
GUARANTEES: Mapping[str, str] = {
    "processes_end": "every process of a run is gone when score() returns",
    "process_limit": "a run's processes are bounded by limits.processes, counted for it alone",
    "network": "a run reaches no network but a loopback of its own",
    "host_sockets": "a run reaches no unix socket of the host, by path or abstract name",
    "filesystem": "a run reads only the system, the interpreter and its work dir, and writes "
    "only its candidate dir and private home",
    "parent_unreachable": "a run can neither signal nor trace the trusted processes",
    "kernel": "a run's system calls reach gVisor's user-space kernel, never the host's",
}
#: Asked for by ``require_isolation=True``: every guarantee of the process sandbox. The
#: kernel boundary only where named (only sandbox='gvisor' gives it).
PROCESS_SANDBOX = tuple(name for name in GUARANTEES if name != "kernel")


@dataclass(frozen=True)
class Facts:
    """What a run had (or will have): the inputs of :func:`assess`."""

    namespaces: bool
    own_uid: bool
    nproc_scope: str
    landlock_abi: int
    network_allowed: bool
    #: Where namespaces are missing: why (for the reasons given).
    why_not_namespaces: str | None = None
    #: Without namespaces: the run was in a cgroup of its own (killed whole at its end), with
    #: ``pids.max`` (sandbox/cgroups.py). Counted only with Landlock, which keeps the run
    #: from moving itself out.
    cgroup: bool = False
    cgroup_pids: bool = False
    #: Inside the Evaluator's gVisor sandbox (sandbox/gvisor.py): a network namespace of the
    #: run's own in a sandbox with no network, and the sandbox's own view of files, in which
    #: /tmp and /dev/shm are empty and read-only.
    gvisor: bool = False


def assess(facts: Facts) -> dict[str, str | None]:
    """Each guarantee: None where it holds, else why not (one phrase)."""
    f = facts
    no_ns = f"no namespaces ({f.why_not_namespaces or 'not used'})"
    scoped = f.landlock_abi >= 6  # Landlock's signal and abstract-socket scoping
    cgroup = f.cgroup and f.landlock_abi >= 1
    found: dict[str, str | None] = {}
    found["processes_end"] = (
        None
        if f.namespaces or f.own_uid or scoped or cgroup
        else f"{no_ns}, the caller's uid and no Landlock signal scope (ABI < 6): a candidate "
        "can kill the subreaper that would end its processes"
    )
    found["process_limit"] = (
        None
        if f.nproc_scope in (NPROC_UID, NPROC_USERNS) or (cgroup and f.cgroup_pids)
        else "a cgroup of its own, but no pids controller delegated to bound it"
        if cgroup
        else "RLIMIT_NPROC counts every process of the caller's uid"
        if f.nproc_scope
        else "runs as root, whose processes RLIMIT_NPROC does not count"
    )
    found["network"] = (
        None
        if f.namespaces or f.network_allowed or f.gvisor
        else f"{no_ns}: "
        + ("TCP denied by Landlock, UDP not" if f.landlock_abi >= 4 else "nothing denied")
    )
    found["host_sockets"] = (
        f"{no_ns}: the host's socket files are reachable by path"
        if not f.namespaces and not f.gvisor
        else "the network is allowed (no network namespace) and Landlock has no abstract "
        "socket scope here (ABI < 6): the host's abstract unix sockets are reachable"
        if f.network_allowed and not scoped
        else None
    )
    found["filesystem"] = (
        None
        if f.landlock_abi >= 1 or ((f.namespaces or f.gvisor) and f.own_uid)
        else f"{no_ns} and no Landlock"
        if not f.namespaces
        else "no Landlock, and the caller's uid (with its supplementary groups) may write "
        "what it may write outside on the directories a run sees"
    )
    found["parent_unreachable"] = (
        None
        if f.namespaces or f.own_uid or scoped
        else f"{no_ns}, the caller's uid and no Landlock signal scope (ABI < 6)"
    )
    found["kernel"] = (
        None
        if f.gvisor
        else "the host's kernel serves every system call (sandbox='gvisor' puts gVisor's between)"
    )
    if f.network_allowed:
        found["network"] = None  # asked for: not a guarantee this run was to give
    return found


def required(spec: bool | Sequence[str]) -> tuple[str, ...]:
    """The names ``require_isolation`` asks for: the process sandbox's for ``True``."""
    if spec is True:
        return PROCESS_SANDBOX
    if spec is False:
        return ()
    if isinstance(spec, str):
        spec = [part.strip() for part in spec.split(",") if part.strip()]
    unknown = [name for name in spec if name not in GUARANTEES]
    if unknown:
        raise ConfigError(
            f"require_isolation: no guarantee named {unknown[0]!r}; use some of "
            f"{', '.join(GUARANTEES)} (or True for all)"
        )
    return tuple(spec)


def refuse_unless_met(names: Sequence[str], found: Mapping[str, str | None]) -> None:
    """Raise ConfigError naming the first required guarantee that does not hold."""
    for name in names:
        why = found.get(name)
        if why is not None:
            raise ConfigError(
                f"require_isolation: {name} ({GUARANTEES[name]}) cannot be met here: {why}; "
                "run where it can (docs/sandbox.md, modes) or leave it out of require_isolation"
            )


def record(found: Mapping[str, str | None]) -> dict[str, Any]:
    """``limits.sandbox``'s ``guarantees`` (held, by name) and ``not_held`` (name: why)."""
    return {
        "guarantees": sorted(name for name, why in found.items() if why is None),
        # The kernel boundary is the gVisor backend's addition, not a guarantee of the
        # process sandbox gone missing: listed where it holds, never as not held.
        "not_held": {
            name: why for name, why in found.items() if why is not None and name != "kernel"
        },
    }
