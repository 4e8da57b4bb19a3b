"""Taking up, in the sandboxed child, a configuration the warm parent prepared.

The warm parent parses pytest's configuration once per command line, and may start its
session (suite/warm_config.py); the child continues from there as ``pytest.main`` would. This
module is the child's part: drop the other configurations' import hooks, take on the
process-wide state the configuration set, and run pytest's own ``wrap_session`` from the
step after the start.
"""

from __future__ import annotations

import faulthandler
import os
import sys
import threading
from dataclasses import dataclass
from typing import Any


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


def process_state() -> tuple[Any, ...]:
    """What pytest's built-in ``pytest_configure`` hooks set for the whole process (found by
    comparing everything process-wide before and after): the unraisable-exception and
    thread-exception hooks, the config that ``pytest.mark`` checks markers against, and
    whether faulthandler is on."""
    from _pytest.mark.structures import MARK_GEN

    return (sys.unraisablehook, threading.excepthook, MARK_GEN._config, faulthandler.is_enabled())


def set_process_state(state: tuple[Any, ...]) -> None:
    from _pytest.mark.structures import MARK_GEN

    sys.unraisablehook, threading.excepthook, MARK_GEN._config, enabled = state
    if not enabled:
        faulthandler.disable()


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
    # The ini's pythonpath went on sys.path while the warm parent parsed, the work dir still
    # empty: the import system cached "nothing here" for those directories (no conftest or
    # helper would ever be found there). Forget it; this run has its files.
    for path in prepared.config.getini("pythonpath"):
        sys.path_importer_cache.pop(str(path), None)
    if prepared.session is None:
        return
    config = prepared.config
    set_process_state(prepared.state)
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
