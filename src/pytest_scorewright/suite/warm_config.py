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
import gc
import importlib
import os
import stat
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from pytest_scorewright.child.shared.monitor import remember_identities
from pytest_scorewright.child.test_process.resume import Prepared, process_state, set_process_state

#: Plugins whose ``pytest_configure`` changes no process-wide state beyond what
#: :func:`_process_state` covers and starts no thread: with only these (and pytest's own),
#: the session is started in the warm parent. Any other plugin is configured in the run.
STARTABLE_PLUGINS = frozenset({"pytest_scorewright.plugin", "pytest_timeout"})

_KEEP = 8  # command lines kept parsed (visible, held-out, a first stage, collection...)


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
    # What the monitor watches of pytest, found again now that this session may have
    # imported more of it (child/shared/monitor.py).
    remember_identities()
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

    before, fds_before = process_state(), _open_fds()
    threads = threading.active_count()
    try:
        session = Session.from_config(config)
        session.exitstatus = ExitCode.OK
        config._do_configure()
        config.hook.pytest_sessionstart(session=session)
        state, fds = process_state(), tuple(sorted(_open_fds() - fds_before))
    except BaseException:
        state, fds = before, ()
        session = None
    finally:
        set_process_state(before)  # the next configuration starts from the same state
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    if (
        session is None
        or threading.active_count() != threads
        or not all(map(_on_devnull, fds))
        or (terminal is not None and not hasattr(terminal, "_tw"))
    ):
        with contextlib.suppress(BaseException):
            config._ensure_unconfigure()
        set_process_state(before)
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
