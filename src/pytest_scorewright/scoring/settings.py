"""An Evaluator's settings: every option, checked once, frozen. They are what travels to
another process that scores with the same Evaluator (a pipeline process, an executor's
worker, a Ray actor): it builds one with :meth:`Evaluator.from_settings
<pytest_scorewright.Evaluator.from_settings>`."""

from __future__ import annotations

import dataclasses
import difflib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_scorewright.errors import ConfigError
from pytest_scorewright.limits import Limits
from pytest_scorewright.sandbox import guarantees
from pytest_scorewright.sandbox.host import Features
from pytest_scorewright.sandbox.plan import RunSettings
from pytest_scorewright.sandbox.workspace import require_dir, require_support
from pytest_scorewright.scoring.objectives import Objective, ObjectiveSpec
from pytest_scorewright.scoring.reference import ISOLATIONS, Isolation

#: A path as callers give it.
PathLike = str | os.PathLike[str]
#: The options that are True or False.
#: The sandbox backends (docs/sandbox.md): Linux namespaces, Landlock and rlimits around each
#: run; or all that can be had of them inside one gVisor sandbox (sandbox/gvisor.py).
SANDBOXES = ("namespaces", "gvisor")
_BOOLS = (
    "network", "fail_closed", "warn_only", "namespaces", "warm", "reference_baseline",
    "dedupe", "coverage",
)  # fmt: skip


@dataclasses.dataclass(frozen=True)
class EvaluatorSettings:
    """The options of :class:`~pytest_scorewright.Evaluator`, each checked.

    Example::

        settings = EvaluatorSettings.of("tests/", reference="reference/", repeats=2)
        Evaluator.from_settings(settings)  # the same Evaluator, as a worker builds it

    - ``tests``: directory of trusted visible tests, copied fresh into every run.
    - ``heldout``: directory of trusted held-out tests, run apart from the visible ones (the
      visible run never sees them); their pass rate is scored apart.
    - ``reference``: a trusted solution (a ``.py`` file or a directory). The expected test ids
      are collected with it, it must pass both suites, its timing is the baseline and its
      anchored values the expectations. The tests it skips or xfails are not applicable: no
      candidate is scored on them. Without it, the suite is collected against a stand-in
      module.
    - ``reference_baseline``: tests the reference fails are not applicable either (instead of
      refusing the suite); each result counts them (``reference_failures``).
    - ``fail_to_pass``: node ids the reference is known to fail and candidates should pass
      (a repository task's fail-to-pass tests, the reference being the code before the fix,
      docs/verify.md): scored like any other test, neither refused nor made not applicable.
    - ``gold``: with a baseline reference, a trusted program that passes what it fails (a
      repository task's gold fix applied to the base). It runs once when preparing; at an
      assertion or a call the reference never reached (it failed before), what the gold's
      run did there is the trusted evidence instead of none (integrity/relative.py).
    - ``module``: the name the tests import the candidate under (a ``.py`` candidate is copied
      in as ``<module>.py``, a package directory as ``<module>/``), or several names (a
      project with more than one top-level package, the first one the main). These modules
      are imported from the candidate only, even where a copy is installed.
    - ``limits``: :class:`~pytest_scorewright.limits.Limits` of every run (budget, CPU,
      memory, files, processes, output).
    - ``network``: allow the network (by default a run has a loopback of its own).
    - ``warn_only``: record integrity evidence without acting on it (by default tamper
      evidence withdraws every test's credit and rejects the result, and gaming evidence
      rejects it; docs/integrity.md). ``fail_closed``: also reject on hints.
    - ``env``: extra environment variables for every run (the rest is an allow-list).
    - ``plugins``: pytest plugins (module names) every run loads (pytest-timeout always is:
      it enforces ``limits.test_timeout_s``). Plugins are not autoloaded in a run: name
      those the suite needs (``pytest_asyncio.plugin``, ``anyio.pytest_plugin``, ...).
    - ``ini``: the suite's own pytest ini options (``{"asyncio_mode": "auto"}``); no ini file
      of the suite or the candidate is read. A multi-line value is a list.
    - ``workdir``: where run directories are made (default: the system temp dir); a tmpfs is
      fastest (docs/performance.md), and one under /dev, /proc or /sys is refused where runs
      have namespaces (each builds its own).
    - ``namespaces``: ``False`` skips Linux namespaces even where they work (the degraded mode
      of docs/sandbox.md, for hosts that forbid them).
    - ``require_isolation``: refuse to score (``ConfigError``, before any run) where one of
      these guarantees cannot be met here: ``True`` for all, or names from
      ``sandbox.guarantees.GUARANTEES`` (docs/sandbox.md).
    - ``repeats``: run the visible tests this many more times, for timing checks (a
      candidate's mean and intervals over whole repeats: ``score(..., repeats=k)``).
    - ``reference_repeats``: run the reference this many times when preparing; a test whose
      outcome differs between those runs is flaky, and not applicable to any candidate.
    - ``support_files``: trusted files or directories copied next to every candidate.
    - ``warm``: fork every run from a warm parent (default); ``False`` forks from the
      caller's process, which must then be single-threaded.
    - ``preload``: modules the warm parent imports once, for every run.
    - ``isolation``: ``"process"`` imports the candidate in a sandboxed process of its own,
      reached through proxies that pass plain data both ways (docs/isolation.md);
      ``"in-process"`` imports it into the test process, guarded by the integrity layer;
      ``"auto"`` (the default) is ``process`` when the reference passes every test that way.
    - ``dedupe``: identical candidate content (files and names) is scored once and its
      result given again (the default: loops re-propose programs); ``False`` scores every
      call anew, for noise studies.
    - ``coverage``: measure the candidate's line coverage (``line_coverage``: its files'
      statements that ran in any of its runs), where its code runs; the lines that ran are
      the candidate's claim, the statements the parent's (docs/scoreresult.md).
    - ``objectives``: name -> ``"PATH:FUNCTION"``, a callable, or an
      :class:`~pytest_scorewright.Objective`; each scores the values tests submit under its
      name, in the parent (docs/objectives.md). Kept as :class:`Objective` values; only
      those given as ``PATH:FUNCTION`` can travel to another process (:attr:`portable`).
    - ``sandbox``: ``namespaces`` (default) or ``gvisor``: every run inside one gVisor
      sandbox of this Evaluator's, whose kernel its system calls reach instead of the host's
      (sandbox/gvisor.py; root and gVisor's ``runsc`` needed; docs/sandbox.md says what each
      backend guarantees).
    """

    tests: str
    heldout: str | None = None
    reference: str | None = None
    modules: tuple[str, ...] = ("solution",)
    limits: Limits = dataclasses.field(default_factory=Limits)
    network: bool = False
    fail_closed: bool = False
    warn_only: bool = False
    env: Mapping[str, str] = dataclasses.field(default_factory=dict)
    plugins: tuple[str, ...] = ("pytest_timeout",)
    workdir: str | None = None
    namespaces: bool = True
    repeats: int = 0
    support_files: tuple[str, ...] = ()
    warm: bool = True
    preload: tuple[str, ...] = ()
    isolation: Isolation = "auto"
    require_isolation: bool | tuple[str, ...] = False
    reference_baseline: bool = False
    fail_to_pass: tuple[str, ...] = ()
    gold: str | None = None
    reference_repeats: int = 1
    ini: Mapping[str, str] = dataclasses.field(default_factory=dict)
    dedupe: bool = True
    coverage: bool = False
    objectives: Mapping[str, Objective] = dataclasses.field(default_factory=dict)
    sandbox: str = "namespaces"

    @classmethod
    def of(
        cls,
        tests: PathLike,
        *,
        heldout: PathLike | None = None,
        reference: PathLike | None = None,
        module: str | Sequence[str] = "solution",
        limits: Limits | None = None,
        env: Mapping[str, str] | None = None,
        plugins: Sequence[str] = ("pytest_timeout",),
        workdir: PathLike | None = None,
        support_files: Sequence[PathLike] | None = None,
        preload: Sequence[str] = (),
        isolation: str = "auto",
        require_isolation: bool | Sequence[str] = False,
        ini: Mapping[str, str] | None = None,
        fail_to_pass: Sequence[str] = (),
        gold: PathLike | None = None,
        objectives: Mapping[str, ObjectiveSpec] | None = None,
        **flags: Any,
    ) -> EvaluatorSettings:
        """Settings from the Evaluator's keyword arguments; a bad value is a ConfigError."""
        _check_flags(flags)
        if limits is not None and not isinstance(limits, Limits):
            raise ConfigError(
                f"limits must be a pytest_scorewright.Limits, not {type(limits).__name__}; "
                "e.g. Limits(timeout_s=30)"
            )
        modules = (module,) if isinstance(module, str) else tuple(module)
        for name in modules or ("",):
            if not name.isidentifier():
                raise ConfigError(f"module {name!r} is not a Python module name; use e.g. solution")
        for key in ini or {}:
            if not key.replace("_", "").replace("-", "").isalnum():
                raise ConfigError(f"ini option {key!r} is not an ini key; use e.g. asyncio_mode")
        if isolation not in ISOLATIONS:
            raise ConfigError(
                f"isolation {isolation!r} is not one of {', '.join(ISOLATIONS)}; leave it at auto"
            )
        if heldout and _inside(heldout, tests):
            raise ConfigError(
                f"the held-out tests {os.fspath(heldout)} are inside the visible tests "
                f"{os.fspath(tests)}: they would run as visible ones, and their failures reach "
                "the LLM; give --tests a directory that holds only the visible tests"
            )
        sandbox = flags.get("sandbox", "namespaces")
        if sandbox not in SANDBOXES:
            raise ConfigError(f"sandbox {sandbox!r} is not one of {', '.join(SANDBOXES)}")
        if sandbox == "gvisor" and flags.get("warm") is False:
            raise ConfigError("sandbox='gvisor' runs every run through the warm parent; drop warm")
        if flags.get("reference_baseline") and reference is None:
            raise ConfigError("reference_baseline needs a reference; pass reference= as well")
        if gold and not flags.get("reference_baseline"):
            raise ConfigError(
                "gold is the fix of a baseline reference; pass reference_baseline=True as well"
            )
        return cls(
            tests=os.fspath(tests),
            heldout=os.fspath(heldout) if heldout else None,
            reference=os.fspath(reference) if reference else None,
            modules=modules,
            limits=limits or Limits(),
            env=dict(env or {}),
            plugins=tuple(plugins),
            workdir=os.fspath(workdir) if workdir else None,
            support_files=tuple(os.fspath(p) for p in support_files or ()),
            preload=tuple(preload),
            isolation=isolation,  # checked above
            require_isolation=require_isolation
            if isinstance(require_isolation, bool)
            else guarantees.required(require_isolation),
            ini=dict(ini or {}),
            fail_to_pass=tuple(fail_to_pass),
            gold=os.fspath(gold) if gold else None,
            objectives={name: _objective(spec) for name, spec in (objectives or {}).items()},
            **flags,
        )

    def run_settings(self, features: Features, *, use_namespaces: bool) -> RunSettings:
        """What the run planner needs of these settings on this host."""
        return RunSettings(
            module=self.modules[0],
            modules=self.modules,
            limits=self.limits,
            network=self.network,
            env=dict(self.env),
            plugins=self.plugins,
            workdir=_work_dir(self.workdir, use_namespaces) if self.workdir else None,
            support=tuple(require_support(p) for p in self.support_files),
            use_namespaces=use_namespaces,
            features=features,
            ini=dict(self.ini),
            coverage=self.coverage,
        )

    @property
    def portable(self) -> bool:
        """Every objective is a ``PATH:FUNCTION``, which another process can load again (a
        callable cannot travel)."""
        return all(isinstance(o.source, str) for o in self.objectives.values())

    def arguments(self) -> dict[str, Any]:
        """The Evaluator's keyword arguments (all but ``tests``) that make these settings."""
        found = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        del found["tests"]
        found["module"] = found.pop("modules")
        return found

    def elsewhere(self) -> EvaluatorSettings:
        """These settings for another machine: less what belongs to this one (``workdir``,
        ``namespaces``, ``warm``: a worker has its own)."""
        return dataclasses.replace(self, workdir=None, namespaces=True, warm=True)


def _check_flags(flags: Mapping[str, Any]) -> None:
    """The flags and counts among the options: known, and of the right type and range."""
    unknown = sorted(set(flags) - set(OPTION_NAMES))
    if unknown:
        raise ConfigError(unknown_option(unknown[0], OPTION_NAMES))
    for name in _BOOLS:
        if name in flags and not isinstance(flags[name], bool):
            raise ConfigError(f"{name} must be True or False, not {flags[name]!r}")
    for name, least in (("repeats", 0), ("reference_repeats", 1)):
        value = flags.get(name)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
            raise ConfigError(f"{name} must be a whole number, not {value!r}")
        if value is not None and value < least:
            raise ConfigError(f"{name} must be {least} or more, not {value}")


def _inside(inner: PathLike, outer: PathLike) -> bool:
    """``inner`` is ``outer`` or lies below it (both resolved)."""
    a, b = Path(inner).resolve(), Path(outer).resolve()
    return a == b or b in a.parents


#: Every keyword option of :meth:`EvaluatorSettings.of` (``module``, not ``modules``).
OPTION_NAMES: tuple[str, ...] = tuple(
    "module" if f.name == "modules" else f.name
    for f in dataclasses.fields(EvaluatorSettings)
    if f.name != "tests"
)


def _objective(spec: ObjectiveSpec) -> Objective:
    """An objective as given (an Objective, ``PATH:FUNCTION``, a callable, its fields)."""
    if isinstance(spec, Objective):
        return spec
    if isinstance(spec, Mapping):
        try:
            return Objective(**spec)
        except TypeError:
            raise ConfigError(
                f"objective fields {sorted(spec)} are not source, minimize, timeout_s"
            ) from None
    return Objective(spec)


def unknown_option(name: str, known: Sequence[str]) -> str:
    """The one line that answers an option nobody knows: the closest known one."""
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]}?" if close else f"; the options: {', '.join(known)}"
    return f"Evaluator has no option {name!r}{hint}"


#: Top-level directories each run with namespaces builds anew (kernel/namespaces.py): a work
#: directory there is not the one the run sees.
_REBUILT = ("/dev", "/proc", "/sys")


def _work_dir(path: str, use_namespaces: bool) -> Path:
    found = require_dir(path, "work directory")
    rebuilt = next((top for top in _REBUILT if found.is_relative_to(top)), None)
    if use_namespaces and rebuilt is not None:
        # /dev/shm is the usual tmpfs people reach for; each run has its own there.
        raise ConfigError(
            f"work directory {os.fspath(found)!r} is under {rebuilt}, which every run builds "
            "anew, so no run can see it; give a directory elsewhere (a tmpfs of its own, "
            "e.g. mounted at /mnt/scorewright, is fastest: docs/performance.md)"
        )
    return found
