"""Planning each sandboxed run: its work dir, its uid, what it may read and write, its
pytest command line. Everything is decided here, in the trusted parent, before the fork.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import os
import shutil
import stat
import sys
import tempfile
import weakref
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_scorewright.kernel.namespaces import hand_over
from pytest_scorewright.limits import Limits
from pytest_scorewright.protocol.wire import (
    MAX_MESSAGES,
    NPROC_UID,
    NPROC_USER,
    NPROC_USERNS,
    Mask,
    MonitorPaths,
    Policy,
    SandboxSpec,
    WorkerPlan,
)
from pytest_scorewright.sandbox import uids
from pytest_scorewright.sandbox.guarantees import Facts
from pytest_scorewright.sandbox.host import Features
from pytest_scorewright.sandbox.janitor import Janitor
from pytest_scorewright.sandbox.workspace import Workspace, owned_tempdir
from pytest_scorewright.suite.early_hooks import needs_early_conftest, needs_parsing_in_run
from pytest_scorewright.suite.rewritten import lay_down, rewritten_suite
from pytest_scorewright.suite.warm_config import STARTABLE_PLUGINS

#: Directories every Python needs to read; the rest of the file system is closed to the
#: child where Landlock is available.
SYSTEM_READ = ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/etc", "/proc")
DEVICES_READ = ("/dev/null", "/dev/zero", "/dev/urandom", "/dev/random")

#: Top-level directories a run with a mount namespace sees as they are (/dev is rebuilt,
#: kernel/namespaces.py). Every other one is hidden behind an empty tmpfs, with only the
#: paths the run needs bound back: no socket of the host, in /tmp, /run, /var, /home or
#: anywhere else, can be reached by its path.
SYSTEM_TOP = frozenset(
    ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "proc", "sys", "dev")
)

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

#: Sandbox uids: a block of 256 per calling process, one uid per run (uids.py).
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
    #: Measure which lines of the candidate's files run (child/shared/coverage_probe.py).
    coverage: bool = False
    #: The key of fresh-argument rounds' seeds (protocol/wire.py ``SandboxSpec``).
    round_key: str = ""
    #: The suite benchmarks (protocol/wire.py ``SandboxSpec``): known once the reference ran.
    benchmarks: bool = True
    #: Every run inside the Evaluator's gVisor sandbox (sandbox/gvisor.py), whose view of
    #: files lets each run's uid reach the interpreter.
    gvisor: bool = False

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
        python_dirs = python_paths()
        self._masks = tuple(masks_for(python_dirs))
        self._python_readable = tuple(
            p for p in python_dirs if not any(_overlaps(Path(p), t) for t in trusted)
        )
        self._hidden = hideable_top_dirs()
        # Root without namespaces can still run as a uid of its own where that uid can reach
        # the interpreter and the work dirs without masks (a container's /usr/local Python).
        base = str(settings.workdir or tempfile.gettempdir())
        self._uid_without_namespaces = settings.gvisor or (not self._masks and _traversable(base))
        # Not root: a uid of each run's own from the caller's subordinate ids (subids.py).
        features = settings.features
        self._subordinate = (
            features.subordinate if settings.use_namespaces and not features.root else None
        )
        # Without namespaces: a cgroup of each run's own, where a subtree is delegated.
        self._cgroup = not settings.use_namespaces and features.cgroup is not None
        # Once per suite, compiled not run: pytest reads it in each run (suite/rewritten.py).
        self._rewritten = {t: rewritten_suite(t) for t in suites}
        # Suites whose initial conftest.py each run must load before configuring.
        self._early = {t: needs_early_conftest(t) for t in suites}
        self.fixed_root, self._unprepared_why = self._fixed_root_if_possible(suites, warm)
        #: Without a warm parent, this process forks its runs itself: a janitor removes
        #: their work dirs if it dies mid-run (sandbox/janitor.py).
        self.janitor = None if warm else Janitor()

    # -- a run ------------------------------------------------------------------------------

    def workspace(self, candidate: Path, tests: Path) -> Workspace:
        """A fresh work dir for one run: the candidate, a copy of ``tests`` with its rewritten
        bytecode, a private home; handed to the run's uid where there is one."""
        s = self.settings
        workspace = Workspace.create(
            candidate, s.module, tests, base=s.workdir, support=s.support, janitor=self.janitor
        )
        try:
            lay_down(self._rewritten.get(tests, {}), workspace.tests)
            (workspace.root / _INI).write_text(s.ini_text, encoding="utf-8")
            uid = self._sandbox_uid()
            if uid is not None:
                _open_up(workspace, uid)
                if self._subordinate is None:  # else the run's own process (in the namespace)
                    hand_over([str(p) for p in _own_dirs(workspace)], uid)
            workspace.uid = uid
            if self.janitor is not None and uid is not None:
                self.janitor.made(workspace.root, uid)
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
        max_messages: int = MAX_MESSAGES,
        *,
        isolated: bool = False,
        suite: str = "",
    ) -> SandboxSpec:
        """The whole plan of one run in ``workspace``, within ``timeout_s``, taking at most
        ``max_messages`` messages from it; ``isolated``: the candidate runs in a process of its
        own, reached through proxies (child/test_process/proxy.py). ``suite`` names the suite,
        whose tests'
        own limits the run takes (``Limits.per_test``)."""
        s = self.settings
        ws = workspace
        if self.fixed_root is not None:
            ws = ws.seen_at(self.fixed_root)  # every path below is the child's view
        args = self._pytest_args(ws, select, extra_args)
        limits = dataclasses.replace(s.limits, timeout_s=timeout_s, per_test=None)
        per_test = s.limits.per_test
        real_paths = workspace.import_paths(s.module)
        paths = [str(ws.root / p.relative_to(workspace.root)) for p in real_paths]
        modules = s.modules or (s.module,)
        user_ns = s.use_namespaces and s.features.user_namespace
        worker, candidate = self._processes(ws, limits, workspace.uid, user_ns, paths, isolated)
        return SandboxSpec(
            worker=worker,
            pytest_args=tuple(args),
            extra_path=() if isolated else tuple(paths),
            isolate_network=not s.network,
            masks=self._view(ws.root) if s.use_namespaces else (),
            stage_dir=str(workspace.root / ".stage"),
            use_namespaces=s.use_namespaces,
            watch=MonitorPaths(
                str(ws.candidate),
                str(ws.tests),
                (str(ws.home), str(ws.chome), str(ws.shared)) if isolated else (str(ws.home),),
            ),
            plugins=run_plugins(s.plugins),
            bind_root=str(workspace.root) if self.fixed_root is not None else "",
            fixed_root=str(self.fixed_root or ""),
            early_conftests=bool(self._early.get(tests)),
            candidate_modules=modules,
            candidate=candidate,
            proxied=_offered(real_paths, modules) if isolated else (),
            candidate_path=tuple(paths) if isolated else (),
            hide=(str(ws.tests), str(ws.home)) if isolated else (),
            max_messages=max_messages,
            one_cpu=isolated and limits.one_cpu,
            coverage=s.coverage,
            round_key=s.round_key,
            benchmarks=s.benchmarks,
            test_limits=per_test.for_suite(suite) if per_test is not None else {},
            test_limit=(per_test.wall_s, per_test.cpu_s) if per_test is not None else None,
            user_namespace=user_ns,
            shared_user_namespace=self._subordinate is not None,
            hand_over=tuple(map(str, _own_dirs(workspace))) if self._subordinate else (),
            cgroup=self._cgroup,
            why_no_namespaces="" if s.use_namespaces else self._why_no_namespaces(),
            gvisor=s.gvisor,
            work_root=str(ws.root) if s.use_namespaces else "",
            work_writable=(
                (str(ws.home), str(ws.chome), str(ws.shared), str(ws.candidate))
                if isolated
                else (str(ws.candidate), str(ws.home))
            )
            if s.use_namespaces
            else (),
        )

    def _processes(
        self,
        ws: Workspace,
        limits: Limits,
        uid: int | None,
        user_ns: bool,
        paths: list[str],
        isolated: bool,
    ) -> tuple[WorkerPlan, WorkerPlan | None]:
        """The test process's plan and, apart, the candidate's process's (``paths``: where the
        candidate's modules are imported from)."""
        plan = functools.partial(self._worker_plan, limits, uid, user_ns)
        if isolated:
            # The candidate's process never reads the tests; the test process never imports the
            # candidate (it is not on its path; proxies answer for its names), though pytest
            # must list the work dir's root. They share TMPDIR (tmp_path files can be handed
            # over).
            # A test's own subprocess of the candidate (``python -m mylib``) would run candidate
            # code in the test process's domain, so the test process gets no PYTHONPATH to it:
            # a suite that needs one fails apart, and auto runs it in process.
            shared = {"TMPDIR": str(ws.shared)}
            worker = plan(
                ws.home,
                {"HOME": str(ws.home), **shared},
                readable=(str(ws.root),),
                writable=(str(ws.home), str(ws.shared)),
            )
            candidate: WorkerPlan | None = plan(
                ws.candidate,
                {"HOME": str(ws.chome), **shared, "PYTHONPATH": os.pathsep.join(paths)},
                readable=(str(ws.candidate), str(ws.chome), str(ws.shared)),
                writable=(str(ws.candidate), str(ws.chome), str(ws.shared)),
            )
        else:
            # A test's own subprocess (``python -m mylib``) imports the candidate as an installed
            # package would be found: through PYTHONPATH (the run itself is forked, not started).
            env = {"HOME": str(ws.home), "TMPDIR": str(ws.home)}
            worker = plan(
                ws.candidate,
                {**env, "PYTHONPATH": os.pathsep.join(paths)},
                readable=(str(ws.root),),
                writable=(str(ws.candidate), str(ws.home)),
            )
            candidate = None
        return worker, candidate

    def _pytest_args(
        self, ws: Workspace, select: Sequence[str] | None, extra_args: Sequence[str]
    ) -> list[str]:
        """pytest's command line for a run of ``ws`` (the child's view of the work dir)."""
        targets = [str(ws.root / nodeid) for nodeid in select] if select else [str(ws.tests)]
        return [
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
            *timeout_args(self.settings.limits),
            *extra_args,
        ]

    def _worker_plan(
        self,
        limits: Limits,
        uid: int | None,
        user_ns: bool,
        cwd: Path,
        env: dict[str, str],
        *,
        readable: tuple[str, ...],
        writable: tuple[str, ...],
    ) -> WorkerPlan:
        """One sandboxed process's plan: ``env`` over the allow-list, Landlock reading the
        system and ``readable``, writing ``writable``."""
        s = self.settings
        # /dev/shm is writable only where it is the run's own tmpfs (namespaces).
        shm = ("/dev/shm",) if s.use_namespaces else ()  # noqa: S108 - a private tmpfs per run
        # Root that stays root (its user namespace maps no other uid) gives up its
        # capabilities, as a user namespace's root does.
        drop = user_ns or (s.features.root and uid is None and s.features.root_uids is None)
        return WorkerPlan(
            cwd=str(cwd),
            env={**BASE_ENV, **env, **s.env},
            limits=limits,
            uid=uid,
            landlock_policy=Policy(
                readable=(*SYSTEM_READ, *DEVICES_READ, *self._python_readable, *readable),
                writable=(*writable, "/dev/null", *shm),
                deny_tcp=not s.network and not s.use_namespaces,
            ),
            landlock_abi=s.features.landlock_abi,
            drop_caps=drop,
            **self._process_count(uid, user_ns),
        )

    def _why_no_namespaces(self) -> str:
        return self.settings.features.namespaces_unavailable or "namespaces=False"

    def _process_count(self, uid: int | None, user_ns: bool) -> dict[str, Any]:
        """What RLIMIT_NPROC can bound in a run (WorkerPlan's ``nproc_*`` fields)."""
        if uid is not None:
            return {"nproc_scope": NPROC_UID}
        if self.settings.features.root:
            return {}  # root is never counted
        if user_ns and self.settings.features.nproc_per_user_namespace:
            # The namespace's creator (the job, or S) and PID 1 share the count.
            return {"nproc_scope": NPROC_USERNS, "nproc_slack": 2}
        return {"nproc_scope": NPROC_USER}  # the count at the start: sandbox/launch.py

    def _view(self, root: Path) -> tuple[Mask, ...]:
        """The masks of a run whose work dir it sees at ``root``: every top-level directory
        but the system's hidden, with the interpreter and the work dir bound back; and
        directories on the way to the interpreter that the run's uid could not traverse."""
        keep = {os.path.realpath(p) for p in (*self._python_readable, str(root))}
        hidden = [
            Mask(d, _outermost(k for k in keep if _under(k, d)))
            for d in self._hidden
            if d not in keep
        ]
        deeper = [m for m in self._masks if not any(_under(m.directory, h) for h in self._hidden)]
        return (*hidden, *deeper)

    # -- what the result says about the runs --------------------------------------------------

    def planned_facts(self) -> Facts:
        """What every run of this planner will have, for the guarantees (guarantees.py)."""
        s = self.settings
        root = s.features.root
        own_uid = (
            root
            and s.features.root_uids is not None
            and (s.use_namespaces or self._uid_without_namespaces)
        ) or bool(self._subordinate)
        user_ns = s.use_namespaces and s.features.user_namespace
        return Facts(
            namespaces=s.use_namespaces,
            own_uid=own_uid,
            nproc_scope=self._process_count(1 if own_uid else None, user_ns).get("nproc_scope", ""),
            landlock_abi=s.features.landlock_abi,
            network_allowed=s.network,
            why_not_namespaces=None if s.use_namespaces else self._why_no_namespaces(),
            cgroup=self._cgroup,
            cgroup_pids=self._cgroup and bool(s.features.cgroup and s.features.cgroup.pids),
            gvisor=s.gvisor,
        )

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
        """Remove the fixed root; runs from here on are planned without one (and without a
        janitor: the caller is closing)."""
        if self.fixed_root is not None:
            self._remove_fixed_root()
            self.fixed_root = None
        if self.janitor is not None:
            self.janitor.close()
            self.janitor = None

    # -- once per Evaluator -----------------------------------------------------------------

    def _fixed_root_if_possible(
        self, suites: Sequence[Path], warm: bool
    ) -> tuple[Path | None, str]:
        """The fixed path every run's work dir is mounted at, so that the warm parent can
        parse pytest's configuration once (suite/warm_config.py), or None where that would not
        give the run pytest.main gives; and why runs might still parse it themselves."""
        s = self.settings
        if not warm or not s.use_namespaces:
            return None, "no warm parent" if not warm else "no namespaces"
        if any(name.startswith("PYTEST") for name in s.env):
            return None, "env sets PYTEST_* variables, read by pytest in the run"
        at_parse = [why for why in map(needs_parsing_in_run, suites) if why]
        if at_parse:
            return None, f"{at_parse[0]}, which pytest needs while it parses"
        # A caller killed with its warm parent leaves it to the next sweep (its name and
        # .owner say whose it is).
        root = owned_tempdir("scorewright-fixed-", s.workdir)
        os.chmod(root, 0o755)  # noqa: S103 - a mount point; the run's own dir covers it
        (root / _INI).write_text(s.ini_text, encoding="utf-8")  # read by the warm parent
        self._remove_fixed_root = weakref.finalize(self, shutil.rmtree, root, True)
        return root, "the warm parent could not parse it"

    def _sandbox_uid(self) -> int | None:
        # Root ignores RLIMIT_NPROC and may signal anything: run as a uid of our own, new for
        # each run so that concurrent runs share neither a process budget nor signals. That
        # needs the namespaces (to hide directories the uid could not traverse), unless it
        # has nothing to traverse that it may not.
        # An ordinary user's runs get theirs from the caller's subordinate ids, if any.
        s = self.settings
        if self._subordinate is not None:
            return self._subordinate.run_uid(next(_uid_counter))
        root_uids = s.features.root_uids
        if root_uids is None or not (s.use_namespaces or self._uid_without_namespaces):
            return None
        return uids.pick(*root_uids, os.getpid(), next(_uid_counter))


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


def _offered(import_paths: Sequence[Path], modules: Sequence[str]) -> tuple[str, ...]:
    """The names the test process answers with proxies: the modules the tests import the
    candidate under, and whatever else the candidate's import paths offer."""
    found = set(modules)
    for path in import_paths:
        if path.is_dir():
            found.update(module_names(path))
    return tuple(sorted(found))


def module_names(candidate_dir: Path) -> tuple[str, ...]:
    """The top-level modules and packages a candidate directory offers the tests."""
    names = set()
    for entry in candidate_dir.iterdir():
        if entry.suffix == ".py" and entry.is_file() and entry.stem.isidentifier():
            names.add(entry.stem)
        elif entry.is_dir() and entry.name.isidentifier() and any(entry.glob("*.py")):
            names.add(entry.name)
    return tuple(sorted(names - {"conftest", "sitecustomize", "usercustomize"}))


def hideable_top_dirs() -> tuple[str, ...]:
    """The top-level directories a run with a mount namespace does not see."""
    found = []
    with os.scandir("/") as entries:
        for entry in entries:
            if entry.name not in SYSTEM_TOP and entry.is_dir(follow_symlinks=False):
                found.append(entry.path)
    return tuple(sorted(found))


def _under(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def _outermost(paths: Iterable[str]) -> tuple[str, ...]:
    """``paths`` without those inside another of them."""
    kept: list[str] = []
    for path in sorted(paths):
        if not any(_under(path, k) for k in kept):
            kept.append(path)
    return tuple(kept)


def _traversable(path: str) -> bool:
    """Every directory from / to ``path`` lets any uid through."""
    real = os.path.realpath(path)
    parts = real.strip("/").split("/") if real != "/" else []
    for depth in range(len(parts) + 1):
        try:
            if not os.stat("/" + "/".join(parts[:depth])).st_mode & stat.S_IXOTH:
                return False
        except OSError:
            return False
    return True


def python_paths() -> list[str]:
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    paths.update(p for p in sys.path if p and os.path.isabs(p))
    return sorted(p for p in paths if os.path.exists(p))


def _overlaps(a: Path, b: Path) -> bool:
    a, b = a.resolve(), b.resolve()
    return a == b or a in b.parents or b in a.parents


def _own_dirs(ws: Workspace) -> tuple[Path, ...]:
    """The directories a run writes, given to its uid."""
    return (ws.candidate, ws.home, ws.chome, ws.shared)


def _open_up(ws: Workspace, uid: int) -> None:
    """Make the work dir usable by the run's uid, whatever the caller's umask: the tests and
    our ini file readable, the private homes private to whoever owns them.

    As root, readable by that uid alone: the tests (held-out ones included) and the work dir
    are given the group of the run's uid (its only group: child/setup/confine.py) and nothing for
    others, so no other user of the machine reads a held-out test while a run goes on. An
    ordinary user's run uid is a subordinate id in a namespace of its own, which this
    process cannot give a file's group to: there the tests are readable by others for the
    run's duration (docs/security.md)."""
    group, dirs, files = (uid, 0o750, 0o640) if os.geteuid() == 0 else (-1, 0o755, 0o644)
    paths = [ws.root]
    with os.scandir(ws.root) as entries:  # our ini file: readable whatever the umask
        paths += [Path(e.path) for e in entries if e.is_file(follow_symlinks=False)]
    for dirpath, _, filenames in os.walk(ws.tests):
        paths.append(Path(dirpath))
        paths += [Path(dirpath) / name for name in filenames]
    for path in paths:
        if path.is_symlink():
            continue  # chmod would follow it: what it points to is not ours to open up
        if group >= 0:
            os.chown(path, 0, group, follow_symlinks=False)
        os.chmod(path, dirs if path.is_dir() else files)
    for private in (ws.home, ws.chome):
        os.chmod(private, 0o700)
