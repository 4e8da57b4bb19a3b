"""Planning each sandboxed run: its work dir, its uid, what it may read and write, its
pytest command line. Everything is decided here, in the trusted parent, before the fork.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import shutil
import stat
import sys
import tempfile
import weakref
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from pytest_scorewright.limits import Limits
from pytest_scorewright.sandbox.features import Features
from pytest_scorewright.sandbox.wire import Mask, MonitorPaths, Policy, SandboxSpec, WorkerPlan
from pytest_scorewright.sandbox.workspace import Workspace
from pytest_scorewright.warm.early_hooks import needs_early_conftest, needs_parsing_in_run
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

#: Environment variables the child gets, whatever the parent has; others come only from the
#: caller's explicit ``env``.
BASE_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONUNBUFFERED": "1",
    # The child loads exactly the plugins named on its command line.
    "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
}

_INI = "scorewright.ini"

#: Sandbox uids: a block of 256 per calling process, one uid per run.
UID_BASE = 1_000_000
_uid_counter = itertools.count()


@dataclasses.dataclass(frozen=True)
class RunSettings:
    """What an Evaluator's arguments say about every run it starts."""

    module: str
    limits: Limits
    network: bool
    env: Mapping[str, str]
    plugins: tuple[str, ...]
    workdir: Path | None
    support: tuple[Path, ...]
    use_namespaces: bool
    features: Features
    #: Every top-level module the tests import the candidate under (``module`` first).
    modules: tuple[str, ...] = ()
    #: The suite's own pytest ini options (``asyncio_mode``, ``filterwarnings``...): written
    #: into our ini file, since no ini file of the suite or candidate is read.
    ini: Mapping[str, str] = dataclasses.field(default_factory=dict)

    @property
    def ini_text(self) -> str:
        lines = ["[pytest]"]
        for key, value in self.ini.items():
            # Continuation lines are indented, as in any ini file (a linelist's entries).
            lines.append(f"{key} = " + "\n    ".join(value.splitlines()))
        return "\n".join(lines) + "\n"


class RunPlanner:
    """Plans the runs of one Evaluator: per suite, the work dir and the :class:`SandboxSpec`.

    Example::

        planner = RunPlanner(settings, suites=[tests, heldout], trusted=[tests, heldout, ref],
                             warm=True)
        workspace = planner.workspace(candidate, tests)
        spec = planner.spec(workspace, tests, (), timeout_s=10.0)
    """

    def __init__(
        self,
        settings: RunSettings,
        *,
        suites: Sequence[Path],
        trusted: Sequence[Path],
        warm: bool,
    ) -> None:
        self.settings = settings
        # Derived once: the interpreter's directories, and what must be unmasked for them.
        python_dirs = _python_paths()
        self._masks = tuple(masks_for(python_dirs))
        self._python_readable = tuple(
            p for p in python_dirs if not any(_overlaps(Path(p), t) for t in trusted)
        )
        # Once per suite, compiled not run: pytest reads it in each run (warm/rewritten.py).
        self._rewritten = {t: rewritten_suite(t) for t in suites}
        # Suites whose initial conftest.py each run must load before configuring.
        self._early = {t: needs_early_conftest(t) for t in suites}
        self.fixed_root, self._unprepared_why = self._fixed_root_if_possible(suites, warm)

    # -- a run ------------------------------------------------------------------------------

    def workspace(self, candidate: Path, tests: Path) -> Workspace:
        """A fresh work dir for one run: the candidate, a copy of ``tests`` with its rewritten
        bytecode, a private home; handed to the run's uid where there is one."""
        s = self.settings
        workspace = Workspace.create(candidate, s.module, tests, base=s.workdir, support=s.support)
        try:
            lay_down(self._rewritten.get(tests, {}), workspace.tests)
            (workspace.root / _INI).write_text(s.ini_text, encoding="utf-8")
            uid = self._sandbox_uid()
            if uid is not None:
                _hand_over(workspace, uid)
            workspace.uid = uid
        except BaseException:
            workspace.remove()
            raise
        return workspace

    def spec(
        self,
        workspace: Workspace,
        tests: Path,
        extra_args: Sequence[str],
        timeout_s: float,
        select: Sequence[str] | None = None,
    ) -> SandboxSpec:
        """The whole plan of one run in ``workspace``, within ``timeout_s``."""
        s = self.settings
        ws = workspace
        if self.fixed_root is not None:
            ws = ws.seen_at(self.fixed_root)  # every path below is the child's view
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
            *timeout_args(s.limits),
            *extra_args,
        ]
        paths = [
            str(ws.root / p.relative_to(workspace.root)) for p in workspace.import_paths(s.module)
        ]
        # A test's own subprocess (``python -m mylib``) imports the candidate as an installed
        # package would be found: through PYTHONPATH (the run itself is forked, not started).
        env = {
            **BASE_ENV,
            "HOME": str(ws.home),
            "TMPDIR": str(ws.home),
            "PYTHONPATH": os.pathsep.join(paths),
            **s.env,
        }
        # /dev/shm is writable only where it is the run's own tmpfs (namespaces).
        shm = ("/dev/shm",) if s.use_namespaces else ()  # noqa: S108 - a private tmpfs per run
        policy = Policy(
            readable=(*SYSTEM_READ, *DEVICES_READ, *self._python_readable, str(ws.root)),
            writable=(str(ws.candidate), str(ws.home), "/dev/null", *shm),
            deny_tcp=not s.network and not s.use_namespaces,
        )
        uid = workspace.uid
        return SandboxSpec(
            worker=WorkerPlan(
                cwd=str(ws.candidate),
                env=env,
                limits=dataclasses.replace(s.limits, timeout_s=timeout_s),
                uid=uid,
                landlock_policy=policy,
                landlock_abi=s.features.landlock_abi,
            ),
            pytest_args=tuple(args),
            extra_path=tuple(paths),
            isolate_network=not s.network,
            masks=self._masks if uid is not None else (),
            stage_dir=str(workspace.root / ".stage"),
            use_namespaces=s.use_namespaces,
            watch=MonitorPaths(str(ws.candidate), str(ws.tests), (str(ws.home),)),
            plugins=run_plugins(s.plugins),
            bind_root=str(workspace.root) if self.fixed_root is not None else "",
            fixed_root=str(self.fixed_root or ""),
            early_conftests=bool(self._early.get(tests)),
            candidate_modules=s.modules or (s.module,),
        )

    # -- what the result says about the runs --------------------------------------------------

    def pytest_config_record(self, how: str | None, tests: Path) -> str:
        """How pytest was configured in a run (``limits.sandbox.pytest_config``), and why."""
        if how == "started":
            return "parsed and session started once, in the warm parent"
        if how == "parsed":
            early = self._early.get(tests)
            if early:
                return (
                    f"parsed once, in the warm parent; configured in each run: {early}, "
                    "so each run loads it before configuring"
                )
            others = sorted(set(self.settings.plugins) - STARTABLE_PLUGINS)
            why = f"plugins {others}" if others else "this pytest's internals differ (prepared.py)"
            return f"parsed once, in the warm parent; configured in each run: {why}"
        return f"parsed in each run: {self._unprepared_why}"

    def close(self) -> None:
        """Remove the fixed root; runs from here on are planned without one."""
        if self.fixed_root is not None:
            self._remove_fixed_root()
            self.fixed_root = None

    # -- once per Evaluator -----------------------------------------------------------------

    def _fixed_root_if_possible(
        self, suites: Sequence[Path], warm: bool
    ) -> tuple[Path | None, str]:
        """The fixed path every run's work dir is mounted at, so that the warm parent can
        parse pytest's configuration once (warm/prepared.py), or None where that would not
        give the run pytest.main gives; and why runs might still parse it themselves."""
        s = self.settings
        if not warm or not s.use_namespaces:
            return None, "no warm parent" if not warm else "no namespaces"
        if any(name.startswith("PYTEST") for name in s.env):
            return None, "env sets PYTEST_* variables, read by pytest in the run"
        at_parse = [why for why in map(needs_parsing_in_run, suites) if why]
        if at_parse:
            return None, f"{at_parse[0]}, which pytest needs while it parses"
        root = Path(tempfile.mkdtemp(prefix="scorewright-fixed-", dir=s.workdir))
        os.chmod(root, 0o755)  # noqa: S103 - a mount point; the run's own dir covers it
        (root / _INI).write_text(s.ini_text, encoding="utf-8")  # read by the warm parent
        self._remove_fixed_root = weakref.finalize(self, shutil.rmtree, root, True)
        return root, "the warm parent could not parse it"

    def _sandbox_uid(self) -> int | None:
        # Root ignores RLIMIT_NPROC and may signal anything: run as a uid of our own, new for
        # each run so that concurrent runs share neither a process budget nor signals. That
        # needs the namespaces (to hide directories the uid could not traverse).
        if not self.settings.features.root or not self.settings.use_namespaces:
            return None
        return UID_BASE + (os.getpid() % 4096) * 256 + next(_uid_counter) % 256


def timeout_args(limits: Limits) -> tuple[str, ...]:
    """pytest-timeout's options for the per-test limit. The signal method: its SIGALRM
    handler fails the test and the run goes on (the thread method would end the whole run
    with ``os._exit``); a test stuck in C code that never returns to the interpreter is
    bounded by the run's deadline instead."""
    seconds = limits.test_seconds
    return (f"--timeout={seconds:g}", "--timeout-method=signal") if seconds > 0 else ()


def run_plugins(plugins: Iterable[str]) -> tuple[str, ...]:
    """Our reporter, pytest-timeout (the per-test limit needs it), then the caller's."""
    ordered = ["pytest_scorewright.plugin", "pytest_timeout", *plugins]
    return tuple(dict.fromkeys(ordered))


def masks_for(paths: Iterable[str]) -> list[Mask]:
    """Directories that an unprivileged uid cannot traverse on the way to ``paths``.

    Typical case: Python installed under /root (mode 0700) by pyenv. Each blocking directory
    is masked with a tmpfs in which only the needed entries are bound back, so the dropped uid
    can import the standard library and nothing else under that directory is visible.
    """
    keep: dict[str, set[str]] = {}
    for path in paths:
        real = os.path.realpath(path)
        if not os.path.exists(real):
            continue
        parts = real.strip("/").split("/")
        for depth in range(len(parts) - 1):
            ancestor = "/" + "/".join(parts[:depth]) if depth else "/"
            try:
                mode = os.stat(ancestor).st_mode
            except OSError:
                break
            if not mode & stat.S_IXOTH:
                keep.setdefault(ancestor, set()).add(os.path.join(ancestor, parts[depth]))
                break
    return [Mask(d, tuple(sorted(k))) for d, k in sorted(keep.items())]


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
