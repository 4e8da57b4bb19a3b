"""pytest's configuration, parsed once in the warm parent instead of in every run.

Parsing the command line and the ini file, registering pytest's ~30 built-in plugins and
building the option parser cost ~20 ms a run (measured: configuration was 21 of the 61 ms of
a forked 12-test ``pytest.main``). The warm parent does it once per distinct command line,
before any fork, for a work dir at a fixed path, and every run's child continues from there:
configure, session, collection and tests, exactly as ``pytest.main`` would.

The fixed path is an empty directory (holding only our ini file) in the warm parent, so
nothing from a suite or a candidate is imported there: pytest loads a conftest.py only
where one exists. Each run's PID 1 bind-mounts that run's own work dir on the fixed path
inside its private mount namespace, so the parsed paths are right in the child and the
suite's conftest.py files are loaded during collection instead.

A conftest.py that pytest would load before configuring (``conftest.py`` in the tests
directory or in a ``test*`` directory below it) may need to be loaded that early
(early_hooks.py): then the run loads it itself, before configuring, as pytest does while
parsing (:func:`load_initial_conftests`), and the session is not started in the warm parent.
Suites whose initial conftest.py acts while pytest parses its command line are configured by
``pytest.main`` in every run, as are runs without namespaces. This relies on
``_pytest.config._prepareconfig``; where a pytest version lacks it, every run is configured
the ordinary way.

With only our own plugins and pytest-timeout registered, the warm parent goes one step
further and starts the session too: ``pytest_configure`` and ``pytest_sessionstart`` (the
fixture manager's scan of every plugin module's attributes), ~19 ms of a run's CPU, plus the
pages that work would have copied in each fork. Configuring changes a few process-wide
things (see :func:`_process_state`); the warm parent puts them back after each start, and
each run's child takes on its own configuration's. pytest's own ``wrap_session`` then
continues in the child from the point after ``pytest_sessionstart`` (:func:`resume`).
"""

from __future__ import annotations

import contextlib
import faulthandler
import gc
import importlib
import os
import stat
import sys
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

#: Plugins whose ``pytest_configure`` changes no process-wide state beyond what
#: :func:`_process_state` covers and starts no thread: with only these (and pytest's own),
#: the session is started in the warm parent. Any other plugin is configured in the run.
STARTABLE_PLUGINS = frozenset({"pytest_scorewright.plugin", "pytest_timeout"})

_KEEP = 8  # command lines kept parsed (visible, held-out, a first stage, collection...)


@dataclass(frozen=True)
class Prepared:
    """A configuration parsed in the warm parent, and the session started for it (or None:
    the run configures and starts it). ``state`` is the process-wide state its configuration
    set (:func:`_process_state`); ``fds`` the descriptors it opened, all on /dev/null."""

    config: Any
    session: Any = None
    state: tuple[Any, ...] = ()
    fds: tuple[int, ...] = ()

    @property
    def kind(self) -> str:
        return "started" if self.session is not None else "parsed"


_prepared: OrderedDict[tuple[str, ...], Prepared] = OrderedDict()


def prepare(
    args: Sequence[str], plugins: Sequence[str], invocation_dir: str, *, start: bool = True
) -> Prepared | None:
    """This command line's configuration (cached), parsed and, where the plugins allow it
    and ``start`` is true, with its session started; or None when it cannot be prepared here
    (the child then runs ``pytest.main``, which reports any problem). ``start`` is false
    when the run must load the suite's initial conftest.py before configuring."""
    key = (*args, "\0", *plugins, "\0", str(start))
    prepared = _prepared.get(key)
    if prepared is not None:
        _prepared.move_to_end(key)
        return prepared
    try:
        from _pytest.config import _prepareconfig
    except ImportError:  # pragma: no cover - a pytest without it
        return None
    previous = os.getcwd()
    try:
        os.chdir(invocation_dir)
        config = _prepareconfig(list(args), [importlib.import_module(p) for p in plugins])
        prepared = Prepared(config)
        if start and set(plugins) <= STARTABLE_PLUGINS and _resumable():
            # A failed start unconfigures the config, which leaves it unusable for the run.
            prepared = _start(config)
    except BaseException:  # a usage error, an import error: the child will report it
        return None
    finally:
        os.chdir(previous)
    if prepared is None:
        return None
    _prepared[key] = prepared
    while len(_prepared) > _KEEP:
        _, old = _prepared.popitem(last=False)
        with contextlib.suppress(Exception):
            # Removes its assertion-rewriting import hook; its configure's process-wide
            # changes were undone already, and its unconfigure undoes them again.
            old.config._ensure_unconfigure()
    # Parsed once, shared by every fork: keep the collector off these pages too.
    gc.collect()
    gc.freeze()
    return prepared


def _start(config: Any) -> Prepared | None:
    """Configure ``config`` and start its session, as ``wrap_session`` does, here in the
    warm parent (the current directory is the invocation dir); None if that failed or left
    anything a fork should not inherit."""
    from _pytest.config import ExitCode
    from _pytest.main import Session

    before, fds_before = _process_state(), _open_fds()
    threads = threading.active_count()
    try:
        session = Session.from_config(config)
        session.exitstatus = ExitCode.OK
        config._do_configure()
        config.hook.pytest_sessionstart(session=session)
        state, fds = _process_state(), tuple(sorted(_open_fds() - fds_before))
    except BaseException:
        state, fds = before, ()
        session = None
    finally:
        _set_process_state(before)  # the next configuration starts from the same state
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    if (
        session is None
        or threading.active_count() != threads
        or not all(map(_on_devnull, fds))
        or (terminal is not None and not hasattr(terminal, "_tw"))
    ):
        with contextlib.suppress(BaseException):
            config._ensure_unconfigure()
        _set_process_state(before)
        return None
    return Prepared(config, session, state, fds)


def _resumable() -> bool:
    """Whether this pytest has the internals :func:`adopt` and :func:`resume` rely on (all
    of pytest 9); if not, runs parse in the warm parent and configure themselves."""
    try:
        from _pytest.config import Config, create_terminal_writer  # noqa: F401
        from _pytest.faulthandler import fault_handler_stderr_fd_key  # noqa: F401
        from _pytest.main import Session
        from _pytest.mark.structures import MARK_GEN
    except ImportError:
        return False
    return (
        isinstance(Session.__dict__.get("from_config"), classmethod)
        and callable(getattr(Config, "_do_configure", None))
        and hasattr(MARK_GEN, "_config")
    )


def _process_state() -> tuple[Any, ...]:
    """What pytest's built-in ``pytest_configure`` hooks set for the whole process (found by
    comparing everything process-wide before and after): the unraisable-exception and
    thread-exception hooks, the config that ``pytest.mark`` checks markers against, and
    whether faulthandler is on."""
    from _pytest.mark.structures import MARK_GEN

    return (sys.unraisablehook, threading.excepthook, MARK_GEN._config, faulthandler.is_enabled())


def _set_process_state(state: tuple[Any, ...]) -> None:
    from _pytest.mark.structures import MARK_GEN

    sys.unraisablehook, threading.excepthook, MARK_GEN._config, enabled = state
    if not enabled:
        faulthandler.disable()


def _open_fds() -> set[int]:
    found = set()
    for name in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            os.fstat(int(name))  # the listing's own descriptor is closed by now
            found.add(int(name))
    return found


def _on_devnull(fd: int) -> bool:
    mode, device = os.fstat(fd), os.stat(os.devnull)
    return stat.S_ISCHR(mode.st_mode) and mode.st_rdev == device.st_rdev


def adopt(prepared: Prepared | None) -> None:
    """In the child, before pytest runs: keep only this run's assertion-rewriting import
    hook (every configuration parsed in the warm parent installed one) and, for a started
    session, take on the process-wide state its configuration set."""
    from _pytest.assertion.rewrite import AssertionRewritingHook

    config = prepared.config if prepared is not None else None
    own = getattr(config.pluginmanager, "rewrite_hook", None) if config is not None else None
    sys.meta_path[:] = [
        finder
        for finder in sys.meta_path
        if not isinstance(finder, AssertionRewritingHook) or finder is own
    ]
    if prepared is None:
        return
    import pytest

    os.environ["PYTEST_VERSION"] = pytest.__version__  # as pytest.main sets it
    if prepared.session is None:
        return
    config = prepared.config
    _set_process_state(prepared.state)
    from _pytest.config import create_terminal_writer
    from _pytest.faulthandler import fault_handler_stderr_fd_key

    # faulthandler's copy of stderr, and the terminal, were the warm parent's (/dev/null):
    # point them at this run's output, as configuring here would have.
    fd = config.stash.get(fault_handler_stderr_fd_key, None)
    if fd is not None:
        os.dup2(2, fd)
        faulthandler.enable(file=fd)
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    if terminal is not None:
        terminal._tw = create_terminal_writer(config, sys.stdout)
        terminal._screen_width = terminal._tw.fullwidth


def load_initial_conftests(prepared: Prepared) -> None:
    """In the child, before configuring: load the suite's initial conftest.py files, as
    pytest does while it parses (the warm parent parsed with the work dir still empty)."""
    config = prepared.config
    config.pytest_load_initial_conftests(early_config=config)


def resume(prepared: Prepared) -> None:
    """Run pytest's ``pytest_cmdline_main`` on a session started in the warm parent:
    ``wrap_session`` is pytest's own, from its start, except that its first three steps
    (make the session, configure, ``pytest_sessionstart``) hand over what the warm parent
    made. Each stand-in puts the original back when called, so nothing else sees them."""
    from _pytest.main import Session

    config, session = prepared.config, prepared.session
    hook = config.hook
    real_start = hook.pytest_sessionstart
    real_from_config = Session.__dict__["from_config"]

    def from_config(cls: type, given: Any) -> Any:
        Session.from_config = real_from_config  # type: ignore[method-assign]
        return session if given is config else real_from_config.__func__(cls, given)

    def do_configure() -> None:
        del config._do_configure  # the class's own again

    def sessionstart(**kwargs: Any) -> None:
        hook.pytest_sessionstart = real_start

    Session.from_config = classmethod(from_config)  # type: ignore[method-assign, assignment]
    config._do_configure = do_configure
    hook.pytest_sessionstart = sessionstart
    hook.pytest_cmdline_main(config=config)
