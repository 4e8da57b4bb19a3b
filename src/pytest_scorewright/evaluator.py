"""The evaluator: score an untrusted candidate with a trusted test suite, in a sandbox.

The Evaluator is the trusted parent. It never imports candidate code; it learns the expected
test ids from a trusted collection when it is built, runs each candidate's visible tests and
held-out tests in separate sandboxed children, and decides every outcome itself.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Executor, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any, TypeVar

from pytest_scorewright.child.anchors import Anchor
from pytest_scorewright.child.confine import BASE_ENV, WorkerPlan
from pytest_scorewright.child.landlock import Policy
from pytest_scorewright.child.namespaces import masks_for
from pytest_scorewright.child.runner import Watch
from pytest_scorewright.errors import ConfigError
from pytest_scorewright.integrity.reasons import Baseline, assess, repeat_reasons
from pytest_scorewright.integrity.static_scan import scan_path
from pytest_scorewright.integrity.verdict import RunVerdict, judge
from pytest_scorewright.limits import Limits
from pytest_scorewright.result import ScoreResult, Signal
from pytest_scorewright.results.measure import build_result
from pytest_scorewright.sandbox import features
from pytest_scorewright.sandbox.supervisor import ChildOutcome, SandboxSpec, run_sandboxed
from pytest_scorewright.sandbox.workspace import CopyReport, Workspace, require_dir
from pytest_scorewright.warm.early_hooks import needs_early_conftest, needs_parsing_in_run
from pytest_scorewright.warm.parent import WarmParent, take_prestarted
from pytest_scorewright.warm.prepared import STARTABLE_PLUGINS
from pytest_scorewright.warm.rewritten import lay_down, rewritten_suite

#: Directories every Python needs to read; the rest of the file system is closed to the
#: child where Landlock is available.
SYSTEM_READ = ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/etc", "/proc")
DEVICES_READ = ("/dev/null", "/dev/zero", "/dev/urandom", "/dev/random")

#: pytest's built-in plugins a sandboxed run never uses: each one left out is a module pytest
#: need not register and scan for fixtures in every run. (The cache would also be a file the
#: candidate could write for the next run.)
UNUSED_PLUGINS = ("cacheprovider", "junitxml", "pastebin", "setuponly", "setupplan", "stepwise")

_INI = "scorewright.ini"
_INI_TEXT = "[pytest]\n"  # ours, so that no ini file of the suite or candidate is read

_UID_BASE = 1_000_000
_uid_counter = itertools.count()

_STUB = '''"""Collection stub: stands in for the candidate while the trusted suite is collected."""


class _Anything:
    def __call__(self, *args, **kwargs):
        return self

    def __getattr__(self, name):
        return self


def __getattr__(name):
    return _Anything()
'''


class Evaluator:
    """Score candidate programs with a trusted pytest suite, each in a fresh sandbox.

    Example::

        evaluator = Evaluator("tests/", heldout="heldout/", reference="reference/")
        result = evaluator.score("candidate.py")  # a .py file or a directory
        print(result.signal("pass_rate"), result.integrity.flagged)

    ``tests`` and ``heldout`` are directories of trusted tests, copied fresh into the sandbox
    for every run; ``reference`` is a trusted solution used to collect the expected test ids
    (without it, the suite is collected against a stand-in module). ``module`` is the name
    the tests import the candidate under. ``namespaces=False`` skips Linux namespaces even
    where they work (the degraded mode of docs/sandbox.md, for hosts that forbid them).
    """

    def __init__(
        self,
        tests: str | os.PathLike[str],
        heldout: str | os.PathLike[str] | None = None,
        reference: str | os.PathLike[str] | None = None,
        module: str = "solution",
        limits: Limits | None = None,
        network: bool = False,
        fail_closed: bool = False,
        env: Mapping[str, str] | None = None,
        plugins: Sequence[str] = ("pytest_timeout",),
        workdir: str | os.PathLike[str] | None = None,
        namespaces: bool = True,
        repeats: int = 0,
        support_files: Sequence[str | os.PathLike[str]] | None = None,
        warm: bool = True,
        preload: Sequence[str] = (),
    ) -> None:
        # Everything needed to build this Evaluator again in another process (score_many with
        # an executor): plain, picklable values.
        self.recipe: dict[str, Any] = {
            "tests": os.fspath(tests),
            "heldout": os.fspath(heldout) if heldout else None,
            "reference": os.fspath(reference) if reference else None,
            "module": module,
            "limits": dataclasses.asdict(limits or Limits()),
            "network": network,
            "fail_closed": fail_closed,
            "env": dict(env or {}),
            "plugins": list(plugins),
            "repeats": repeats,
            "support_files": [os.fspath(p) for p in support_files or ()],
            "preload": list(preload),
        }
        if not module.isidentifier():
            raise ConfigError(f"module {module!r} is not a Python module name; use e.g. solution")
        self.module = module
        self.tests = require_dir(tests, "tests directory")
        self.heldout = require_dir(heldout, "held-out tests directory") if heldout else None
        self.reference = require_candidate(reference, "reference") if reference else None
        self.limits = limits or Limits()
        self.network = network
        self.fail_closed = fail_closed
        self.env = dict(env or {})
        self.plugins = tuple(plugins)
        self.workdir = require_dir(workdir, "work directory") if workdir else None
        self.support = tuple(_require_support(p) for p in support_files or ())
        self.features = features.probe()
        # Every run is forked by the warm parent, a clean single-threaded process; warm=False
        # forks from this process instead (which must then be single-threaded).
        self._warm = (take_prestarted(preload) or WarmParent(preload)) if warm else None
        self.use_namespaces = namespaces and self.features.namespaces_unavailable is None
        # Derived once: the interpreter's directories, and what must be unmasked for them.
        self._python_dirs = _python_paths()
        self._masks = tuple(masks_for(self._python_dirs))
        trusted = [p for p in (self.tests, self.heldout, self.reference) if p is not None]
        self._python_readable = tuple(
            p for p in self._python_dirs if not any(_overlaps(Path(p), t) for t in trusted)
        )
        # Once per suite, compiled not run: pytest reads it in each run (rewritten.py).
        self._rewritten = {t: rewritten_suite(t) for t in (self.tests, self.heldout) if t}
        self._fixed_root, self._unprepared_why = self._fixed_root_if_possible()
        # Suites whose initial conftest.py each run must load before configuring.
        self._early = {t: needs_early_conftest(t) for t in (self.tests, self.heldout) if t}
        self.expected_visible, self.expected_heldout = self._collect_suites()
        if repeats < 0:
            raise ConfigError(f"repeats must be 0 or more, not {repeats}")
        self.repeats = repeats
        self.anchors: dict[str, dict[str, list[Anchor]]] = {}
        self.baseline = self._measure_reference() if self.reference is not None else None

    # -- public ------------------------------------------------------------------------------

    def score(
        self,
        candidate: str | os.PathLike[str],
        *,
        only: Sequence[str] | None = None,
        heldout: bool = True,
    ) -> ScoreResult:
        """Score one candidate: a ``.py`` file (run as ``<module>.py``) or a directory.

        ``only`` limits the visible run to those test ids (a quick first stage);
        ``heldout=False`` skips the held-out run.
        """
        path = require_candidate(candidate, "candidate")
        expected_visible = self.expected_visible
        if only is not None:
            wanted = set(only)
            unknown = wanted - {nodeid for nodeid, _ in expected_visible}
            if unknown:
                raise ConfigError(f"no visible test {sorted(unknown)[0]!r}; use ids the suite has")
            expected_visible = [e for e in expected_visible if e[0] in wanted]
        select = [nodeid for nodeid, _ in expected_visible] if only is not None else None
        suites = self._suites(expected_visible, select, with_heldout=heldout)
        judged, copied, visible_s = self._run_suites(path, suites)
        runs = [(suite.name, run) for suite, run in zip(suites, judged, strict=True)]
        repeats = [judged[0][0].timing.tests_s]
        for _ in range(self.repeats):
            ((again, _),), _, _ = self._run_suites(path, suites[:1], visible_s)
            repeats.append(again.timing.tests_s)
        return self._result(path, runs, copied, repeats)

    def score_many(
        self,
        candidates: Sequence[str | os.PathLike[str]],
        workers: int = 2,
        executor: Executor | None = None,
    ) -> Iterator[tuple[int, ScoreResult]]:
        """Score candidates ``workers`` at a time; yields ``(index, result)`` as each finishes.
        Each candidate's visible and held-out runs go at once, so up to ``2 * workers``
        sandboxes are alive together.

        With ``executor`` (any ``concurrent.futures.Executor``: a process pool, Dask's
        ``Client.get_executor()``), candidates go to its workers instead; each worker process
        builds this Evaluator once, with a warm parent of its own. Paths must be valid on the
        workers. A candidate that cannot be scored at all (a missing path) is raised before
        any work.
        """
        paths = [require_candidate(c, "candidate") for c in candidates]
        if workers < 1:
            raise ConfigError(f"workers must be at least 1, not {workers}")
        if executor is not None:
            # A partial of a module-level function: it must pickle, to reach other processes.
            remote = _bounded(executor, functools.partial(score_on_worker, self.recipe), paths, 256)
            for index, text in remote:
                yield index, ScoreResult.from_json(text)
            return
        if self._warm is None or workers == 1:
            for index, path in enumerate(paths):
                yield index, self.score(path)
            return
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="scorewright") as pool:
            yield from _bounded(pool, self.score, paths, 2 * workers)

    def close(self) -> None:
        """Stop the warm parent (also happens when this process exits)."""
        if self._warm is not None:
            self._warm.close()
            self._warm = None
        if self._fixed_root is not None:
            self._remove_fixed_root()
            self._fixed_root = None  # runs from here on fork from this process, unprepared

    def __enter__(self) -> Evaluator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- runs --------------------------------------------------------------------------------

    def _suites(
        self,
        expected_visible: Sequence[tuple[str, bool]],
        select: Sequence[str] | None,
        *,
        with_heldout: bool,
    ) -> list[_Suite]:
        suites = [_Suite("visible", self.tests, expected_visible, select)]
        if self.heldout is not None and with_heldout:
            suites.append(_Suite("held-out", self.heldout, self.expected_heldout, None))
        return suites

    def _run_suites(
        self, candidate: Path, suites: Sequence[_Suite], share: float | None = None
    ) -> tuple[list[tuple[RunVerdict, ChildOutcome]], CopyReport, float]:
        """Run and judge the candidate on each suite, within limits.timeout_s in all (or
        ``share`` each); returns the judged runs, the first copy report and the visible
        run's time limit."""
        budget, grace = self.limits.timeout_s, self.limits.grace_s
        if share is not None or len(suites) == 1:
            shares = [share or budget] * len(suites)
        elif self._warm is not None:
            # Independent runs, so at once: each within the whole budget less the grace
            # period, and the call still keeps to limits.timeout_s.
            shares = [max(budget - grace, 0.1)] * len(suites)
        else:
            # One after the other, forked from this process: the visible run gets a share in
            # proportion to its tests, the held-out run whatever is left.
            started = time.monotonic()
            sizes = [len(suite.expected) for suite in suites]
            first = max(budget - 2 * grace, 0.1) * sizes[0] / sum(sizes)
            runs = [self._judged_run(candidate, suites[0], first)]
            left = budget - (time.monotonic() - started) - grace
            runs += [self._judged_run(candidate, suites[1], max(left, 0.1))]
            return [r for r, _ in runs], runs[0][1], first
        launched: list[_Launched] = []
        try:
            for suite, limit in zip(suites, shares, strict=True):
                launched.append(self._launch(candidate, suite.tests, (), limit, suite.select))
        finally:
            observed = _wait_all(launched)  # every run ends and its work dir goes, whatever
        judged = [
            (self._judge(suite, outcome, limit), outcome)
            for suite, outcome, limit in zip(suites, observed, shares, strict=True)
        ]
        return judged, launched[0].workspace.report, shares[0]

    def _judged_run(
        self, candidate: Path, suite: _Suite, timeout_s: float
    ) -> tuple[tuple[RunVerdict, ChildOutcome], CopyReport]:
        observed, copied = self._run(candidate, suite.tests, (), timeout_s, suite.select)
        return (self._judge(suite, observed, timeout_s), observed), copied

    def _judge(self, suite: _Suite, observed: ChildOutcome, timeout_s: float) -> RunVerdict:
        return judge(
            suite.expected,
            observed,
            timeout_s=timeout_s,
            reference_anchors=self.anchors.get(suite.name),
        )

    def _measure_reference(self) -> Baseline:
        """Run the reference on both suites: it must pass them; its timing is the baseline and
        its anchored values the expectations."""
        reference = self.reference
        if reference is None:  # pragma: no cover - only called with a reference
            return Baseline(collected_s=None)
        baseline = Baseline(collected_s=None)
        suites = self._suites(self.expected_visible, None, with_heldout=True)
        # Each suite with the whole budget, at once through the warm parent.
        judged, _, _ = self._run_suites(reference, suites, share=self.limits.timeout_s)
        for suite, (verdict, _) in zip(suites, judged, strict=True):
            name = suite.name
            failing = [r.nodeid for r in verdict.records if not r.passed]
            odd = [a.not_plain for v in verdict.anchors.values() for a in v if a.not_plain]
            if verdict.error or failing or odd:
                problem = verdict.error or (
                    f"{len(failing)} test(s) fail, first {failing[0]}"
                    if failing
                    else f"it anchors a {odd[0]}, not a plain value"
                )
                raise ConfigError(
                    f"the reference does not pass its own {name} tests ({problem}); fix the "
                    "reference or the tests"
                )
            self.anchors[name] = verdict.anchors
            if name == "visible":
                baseline = Baseline(collected_s=verdict.timing.collected_s)
        return baseline

    def _collect_suites(self) -> tuple[list[tuple[str, bool]], list[tuple[str, bool]]]:
        """The visible and held-out tests' ids (and held-out marks), collected at once."""
        suites = [(self.tests, False)] + ([(self.heldout, True)] if self.heldout else [])
        with tempfile.TemporaryDirectory(prefix="scorewright-stub-") as stub_dir:
            source = self.reference
            if source is None:
                source = Path(stub_dir, f"{self.module}.py")
                source.write_text(_STUB, encoding="utf-8")
            launched: list[_Launched] = []
            try:
                for tests, _ in suites:
                    launched.append(
                        self._launch(source, tests, ("--collect-only",), self.limits.timeout_s)
                    )
            finally:
                observed = _wait_all(launched)
        found = [
            self._collected(tests, outcome, all_heldout=all_heldout)
            for (tests, all_heldout), outcome in zip(suites, observed, strict=True)
        ]
        return found[0], found[1] if len(found) > 1 else []

    def _collected(
        self, tests: Path, observed: ChildOutcome, *, all_heldout: bool
    ) -> list[tuple[str, bool]]:
        ids: list[tuple[str, bool]] = []
        problems: list[str] = []
        for _, message in observed.messages:
            if message.get("type") == "collected":
                ids += zip(message["ids"], message["heldout"], strict=True)
            elif message.get("type") == "collect_error":
                last = str(message.get("message", "")).strip().splitlines() or [""]
                problems.append(f"{message.get('nodeid')}: {last[-1]}")
            elif message.get("type") in ("sandbox_error", "child_error", "internal_error"):
                problems.append(str(message.get("reason")))
        what = "the reference" if self.reference else "a stand-in module (pass a reference)"
        if problems:
            raise ConfigError(
                f"the tests in {tests} could not be collected with {what}: {problems[0]}"
            )
        if observed.timed_out:
            raise ConfigError(f"collecting the tests in {tests} timed out; raise the timeout")
        if not ids:
            raise ConfigError(f"no tests were collected from {tests}; check the directory")
        return [(nodeid, heldout or all_heldout) for nodeid, heldout in ids]

    def _run(
        self,
        candidate: Path,
        tests: Path,
        extra_args: Iterable[str],
        timeout_s: float,
        select: Sequence[str] | None = None,
    ) -> tuple[ChildOutcome, CopyReport]:
        run = self._launch(candidate, tests, extra_args, timeout_s, select)
        return run.wait(), run.workspace.report

    def _launch(
        self,
        candidate: Path,
        tests: Path,
        extra_args: Iterable[str],
        timeout_s: float,
        select: Sequence[str] | None = None,
    ) -> _Launched:
        """Start a sandboxed run (through the warm parent; without one, run it to the end
        here); ``wait()`` on the result gives its outcome and removes its work dir."""
        workspace = Workspace.create(
            candidate, self.module, tests, base=self.workdir, support=self.support
        )
        try:
            lay_down(self._rewritten.get(tests, {}), workspace.tests)
            uid = self._sandbox_uid()
            if uid is not None:
                _hand_over(workspace, uid)
            spec = self._spec(workspace, uid, tuple(extra_args), timeout_s, select)
            if self._early.get(tests):
                spec = dataclasses.replace(spec, early_conftests=True)
            if self._warm is not None:
                return _Launched(workspace, self._warm.submit(spec))
            done: Future[ChildOutcome] = Future()
            done.set_result(run_sandboxed(spec))
            return _Launched(workspace, done)
        except BaseException:
            workspace.remove()
            raise

    def _fixed_root_if_possible(self) -> tuple[Path | None, str]:
        """The fixed path every run's work dir is mounted at, so that the warm parent can
        parse pytest's configuration once (prepared.py), or None where that would not give
        the run pytest.main gives; and why runs might still parse it themselves."""
        if self._warm is None or not self.use_namespaces:
            return None, "no warm parent" if self._warm is None else "no namespaces"
        if any(name.startswith("PYTEST") for name in self.env):
            return None, "env sets PYTEST_* variables, read by pytest in the run"
        suites = [t for t in (self.tests, self.heldout) if t is not None]
        at_parse = [why for why in map(needs_parsing_in_run, suites) if why]
        if at_parse:
            return None, f"{at_parse[0]}, which pytest needs while it parses"
        root = Path(tempfile.mkdtemp(prefix="scorewright-fixed-", dir=self.workdir))
        os.chmod(root, 0o755)  # noqa: S103 - a mount point; the run's own dir covers it
        (root / _INI).write_text(_INI_TEXT, encoding="utf-8")  # read by the warm parent
        self._remove_fixed_root = weakref.finalize(self, shutil.rmtree, root, True)
        return root, "the warm parent could not parse it"

    def _sandbox_uid(self) -> int | None:
        # Root ignores RLIMIT_NPROC and may signal anything: run as a uid of our own, new for
        # each run so that concurrent runs share neither a process budget nor signals. That
        # needs the namespaces (to hide directories the uid could not traverse).
        if not self.features.root or not self.use_namespaces:
            return None
        return _UID_BASE + (os.getpid() % 4096) * 256 + next(_uid_counter) % 256

    def _spec(
        self,
        ws: Workspace,
        uid: int | None,
        extra_args: tuple[str, ...],
        timeout_s: float,
        select: Sequence[str] | None = None,
    ) -> SandboxSpec:
        (ws.root / _INI).write_text(_INI_TEXT, encoding="utf-8")
        real_root = ws.root
        if self._fixed_root is not None:
            ws = ws.seen_at(self._fixed_root)  # every path below is the child's view
        targets = [str(ws.root / nodeid) for nodeid in select] if select else [str(ws.tests)]
        args = [
            *targets,
            # --confcutdir the work dir's root (which has no conftest.py): it must exist when
            # the warm parent parses, where the tests directory does not.
            *("-c", str(ws.root / _INI), "--rootdir", str(ws.root), "--confcutdir", str(ws.root)),
            # No output capture: the child's output is already a bounded pipe, and fd capture
            # would dup2 over the warm parent's own descriptors while it parses (prepared.py).
            "--capture=no",
            *itertools.chain.from_iterable(("-p", f"no:{p}") for p in UNUSED_PLUGINS),
            # --tb=line: the records keep only the crash message, which every style has;
            # rendering source for each failure cost ~8 ms per failing test.
            *("-q", "--color=no", "--tb=line"),
            *extra_args,
        ]
        env = {**BASE_ENV, "HOME": str(ws.home), "TMPDIR": str(ws.home), **self.env}
        readable = self._readable_paths(ws)
        use_namespaces = self.use_namespaces
        # /dev/shm is writable only where it is the run's own tmpfs (namespaces).
        shm = ("/dev/shm",) if use_namespaces else ()  # noqa: S108 - a private tmpfs per run
        policy = Policy(
            readable=readable,
            writable=(str(ws.candidate), str(ws.home), "/dev/null", *shm),
            deny_tcp=not self.network and not use_namespaces,
        )
        return SandboxSpec(
            worker=WorkerPlan(
                cwd=str(ws.candidate),
                env=env,
                limits=dataclasses.replace(self.limits, timeout_s=timeout_s),
                uid=uid,
                landlock_policy=policy,
                landlock_abi=self.features.landlock_abi,
            ),
            pytest_args=tuple(args),
            extra_path=(str(ws.candidate),),
            isolate_network=not self.network,
            masks=self._masks if uid is not None else (),
            stage_dir=str(real_root / ".stage"),
            use_namespaces=use_namespaces,
            watch=Watch(str(ws.candidate), str(ws.tests), (str(ws.home),)),
            plugins=("pytest_scorewright.plugin", *self.plugins),
            bind_root=str(real_root) if self._fixed_root is not None else "",
            fixed_root=str(self._fixed_root or ""),
        )

    def _pytest_config_record(self, observed: ChildOutcome) -> str:
        how = observed.isolation.get("pytest_config")
        if how == "started":
            return "parsed and session started once, in the warm parent"
        if how == "parsed":
            early = self._early.get(self.tests)
            if early:
                return (
                    f"parsed once, in the warm parent; configured in each run: {early}, "
                    "so each run loads it before configuring"
                )
            others = sorted(set(self.plugins) - STARTABLE_PLUGINS)
            why = f"plugins {others}" if others else "this pytest's internals differ (prepared.py)"
            return f"parsed once, in the warm parent; configured in each run: {why}"
        return f"parsed in each run: {self._unprepared_why}"

    def _readable_paths(self, ws: Workspace) -> tuple[str, ...]:
        return (*SYSTEM_READ, *DEVICES_READ, *self._python_readable, str(ws.root))

    # -- the result --------------------------------------------------------------------------

    def _result(
        self,
        candidate: Path,
        runs: Sequence[tuple[str, tuple[RunVerdict, ChildOutcome]]],
        copied: CopyReport,
        repeat_times: Sequence[float],
    ) -> ScoreResult:
        records = [r for _, (verdict, _) in runs for r in verdict.records]
        errors = [f"{name} run: {v.error}" for name, (v, _) in runs if v.error]
        repeat_found, repeat_figures = repeat_reasons(repeat_times)
        reasons = assess(
            records,
            [(name, verdict) for name, (verdict, _) in runs],
            config_files=copied.config_files,
            static=scan_path(candidate),
            baseline=self.baseline,
            extra=repeat_found,
        )
        observed = [o for _, (_, o) in runs]
        cpu = [o.cpu_s for o in observed]
        extra_signals = [Signal(k, v, "ratio", False) for k, v in repeat_figures.items()]
        if all(c is not None for c in cpu):
            extra_signals.append(Signal("cpu_s", round(sum(c or 0.0 for c in cpu), 6), "s", False))
        result = build_result(
            records,
            mode="evaluator",
            duration_s=sum(o.wall_s for o in observed),
            error="; ".join(errors) or None,
            reasons=reasons,
            limits=self._limits_record(runs),
            counts_known=True,
            extra_signals=extra_signals,
            fail_closed=self.fail_closed,
            extra={"candidate": str(candidate), "output": excerpt(observed[0].output)},
        )
        return result

    def _limits_record(
        self, runs: Sequence[tuple[str, tuple[RunVerdict, ChildOutcome]]]
    ) -> dict[str, Any]:
        verdict, observed = runs[0][1]
        applied = verdict.sandbox
        mode = observed.isolation.get("mode", "unknown")
        if self.network:
            network = "allowed (--allow-network)"
        elif mode == "namespaces":
            network = "isolated (network namespace: loopback only)"
        elif applied.get("landlock_tcp"):
            network = "TCP denied by Landlock; UDP and unix sockets not isolated"
        else:
            network = "NOT isolated: no network namespace and no Landlock TCP rules here"
        return {
            **self.limits.to_dict(),
            "sandbox": {
                "processes": mode,
                "why_not_namespaces": observed.isolation.get("why"),
                "uid": applied.get("uid"),
                "nproc_enforced": applied.get("nproc") is not None,
                "landlock_abi": applied.get("landlock_abi", 0),
                "network": network,
                "pytest_config": self._pytest_config_record(observed),
            },
        }


@dataclasses.dataclass(frozen=True)
class _Suite:
    """One suite to run a candidate on: its name, directory, expected ids and selection."""

    name: str
    tests: Path
    expected: Sequence[tuple[str, bool]]
    select: Sequence[str] | None


@dataclasses.dataclass(frozen=True)
class _Launched:
    workspace: Workspace
    future: Future[ChildOutcome]

    def wait(self) -> ChildOutcome:
        try:
            return self.future.result()
        finally:
            self.workspace.remove()


def _wait_all(launched: Sequence[_Launched]) -> list[ChildOutcome]:
    outcomes, errors = [], []
    for run in launched:
        try:
            outcomes.append(run.wait())
        except Exception as exc:  # the warm parent died: raised once every run is settled
            errors.append(exc)
    if errors:
        raise errors[0]
    return outcomes


T = TypeVar("T")


def _bounded(
    executor: Executor, work: Callable[[Path], T], paths: Sequence[Path], window: int
) -> Iterator[tuple[int, T]]:
    """Run ``work`` over ``paths`` with at most ``window`` in flight, yielding as each ends;
    finished futures are dropped at once, so a long run holds no old results."""
    queue = iter(enumerate(paths))
    pending: dict[Future[T], int] = {}

    def fill() -> None:
        for index, path in itertools.islice(queue, window - len(pending)):
            pending[executor.submit(work, path)] = index

    fill()
    while pending:
        finished, _ = wait(pending, return_when=FIRST_COMPLETED)
        for future in finished:
            yield pending.pop(future), future.result()
        fill()


_worker_evaluators: dict[str, Evaluator] = {}
_worker_lock = threading.Lock()


def score_on_worker(recipe: dict[str, Any], candidate: str | os.PathLike[str]) -> str:
    """Run on an executor's worker: score with this process's Evaluator for ``recipe``
    (built on first use, then kept warm), and return the result as JSON."""
    key = json.dumps(recipe, sort_keys=True)
    with _worker_lock:
        evaluator = _worker_evaluators.get(key)
        if evaluator is None:
            arguments = dict(recipe)
            arguments["limits"] = Limits(**arguments["limits"])
            evaluator = _worker_evaluators[key] = Evaluator(**arguments)
    return evaluator.score(candidate).to_json()


def require_candidate(path: str | os.PathLike[str], what: str) -> Path:
    p = Path(path)
    if not p.exists():
        raise ConfigError(f"{what} {os.fspath(p)!r} does not exist; check the path")
    if p.is_file() and p.suffix != ".py":
        raise ConfigError(f"{what} {os.fspath(p)!r} is not a .py file or a directory")
    if not p.is_file() and not p.is_dir():
        raise ConfigError(f"{what} {os.fspath(p)!r} is not a regular file or a directory")
    return p.resolve()


def _require_support(path: str | os.PathLike[str]) -> Path:
    p = Path(path)
    if not p.exists():
        raise ConfigError(f"support file {os.fspath(p)!r} does not exist; check the path")
    return p.resolve()


def _python_paths() -> list[str]:
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    paths.update(p for p in sys.path if p and os.path.isabs(p))
    return sorted(p for p in paths if os.path.exists(p))


def _overlaps(a: Path, b: Path) -> bool:
    a, b = a.resolve(), b.resolve()
    return a == b or a in b.parents or b in a.parents


def _hand_over(ws: Workspace, uid: int) -> None:
    """Make the work dir usable by ``uid``: its own files writable, the tests read-only."""
    os.chmod(ws.root, 0o755)  # noqa: S103 - the sandbox uid must traverse it, not write it
    for top in (ws.candidate, ws.home):
        for dirpath, _, filenames in os.walk(top):
            os.chown(dirpath, uid, uid)
            for name in filenames:
                os.chown(os.path.join(dirpath, name), uid, uid)
    os.chmod(ws.home, 0o700)
    for dirpath, _, filenames in os.walk(ws.tests):
        os.chmod(dirpath, 0o755)  # noqa: S103 - readable tests, writable by root only
        for name in filenames:
            os.chmod(os.path.join(dirpath, name), 0o644)


def excerpt(text: str, head: int = 2048, tail: int = 6144) -> str:
    """The run's output for the result: its start and its end. The start holds what a crash
    prints first (faulthandler's "Fatal Python error", a conftest's import error); the end holds
    pytest's summary. A deep stack between them is what gets cut, and the cut says its size."""
    if len(text) <= head + tail:
        return text
    left_out = len(text) - head - tail
    return f"{text[:head]}\n… [{left_out} characters left out] …\n{text[-tail:]}"
