"""What runs on an executor's worker, the process body that builds an Evaluator: the suite's
bundle unpacked once into a private directory, an Evaluator built from it once and kept
warm, and each candidate written out from its content, scored and removed. Nothing here
reads the client's file system.

:func:`score` never raises: whatever goes wrong is a :class:`Reply` the client turns into a
result (fanout/dispatch.py), so an executor never logs a failed task's arguments (which hold
the suite, held-out tests included). The client's side reaches it by name only
(fanout/remote.py ``score_remote``), so the fan-out never imports the Evaluator.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import socket
import sys
import tempfile
import threading
from pathlib import Path

from pytest_scorewright._version import __version__
from pytest_scorewright.errors import ConfigError, InfrastructureError, ScorewrightError
from pytest_scorewright.evaluator import Evaluator
from pytest_scorewright.fanout.content import TREE_MAX, Tree, unpack
from pytest_scorewright.fanout.remote import SUITE_MAX, RemoteTask, Reply
from pytest_scorewright.fanout.suite_bundle import settings_at

_suites: dict[str, Path] = {}
_evaluators: dict[str, Evaluator | str] = {}
_lock = threading.Lock()
_cleanup_registered = False


def score(task: RemoteTask, suite: Tree | None = None) -> Reply:
    """Run on an executor's worker: score ``task``'s candidate with this process's
    Evaluator for its suite and settings (built on first use from the bundle ``suite``, which
    only a worker without a copy needs), and say how it went."""
    worker = _worker_name()
    if task.version != __version__:
        return Reply(
            "refused",
            f"the worker has pytest-scorewright {__version__}, the client {task.version}; "
            "install the same version on the workers",
            worker,
        )
    try:
        root = _suite_root(task.suite, suite)
    except InfrastructureError as exc:
        return Reply("refused", str(exc), worker)
    if root is None:
        return Reply("need_suite", "", worker)
    try:
        evaluator = _evaluator(task, root)
    except Exception as exc:
        return Reply(
            "failed", f"the worker could not build the Evaluator: {_build_error(exc, root)}", worker
        )
    try:
        return Reply("result", _score(evaluator, task.candidate), worker)
    except ConfigError as exc:
        return Reply("refused", str(exc), worker)
    except Exception as exc:
        return Reply("failed", f"the worker could not score it: {_say(exc)}", worker)


def _say(exc: BaseException) -> str:
    return str(exc) if isinstance(exc, ScorewrightError) else f"{type(exc).__name__}: {exc}"


def _build_error(exc: BaseException, root: Path) -> str:
    """Why an Evaluator could not be built here, fit to go into a result: the bundle's
    paths named as such, and nothing said about the held-out tests beyond that they are
    the problem (a failure message there could quote their inputs)."""
    text = _say(exc).replace(os.fspath(root), "<suite>")
    if "held-out" in text or "<suite>/heldout" in text:
        head = text.split(" (", 1)[0].split(": ", 1)[0]
        return f"{head} (details withheld: they concern the held-out tests)"
    return text


def _worker_name() -> str:
    """Dask's address for this worker where it is one; a Ray actor's node and process;
    else the host and process."""
    distributed = sys.modules.get("distributed")
    if distributed is not None:
        with contextlib.suppress(Exception):  # not running in a Dask worker
            return str(distributed.get_worker().address)
    ray = sys.modules.get("ray")
    if ray is not None:
        with contextlib.suppress(Exception):  # not running in a Ray actor
            context = ray.get_runtime_context()
            if context.get_actor_id() is not None:
                return f"ray:{context.get_node_id()[:12]}:{os.getpid()}"
    return f"{socket.gethostname()}:{os.getpid()}"


def _suite_root(digest: str, bundle: Tree | None) -> Path | None:
    """Where this worker keeps the suite ``digest``: unpacked from ``bundle`` on its first
    arrival (checked against its hash first), then kept; None while it has no copy."""
    with _lock:
        root = _suites.get(digest)
        if root is not None and not (root / "tests").is_dir():
            _forget(digest)  # removed under us (a temp-dir cleaner): take it again
            root = None
        if root is not None or bundle is None:
            return root
        if bundle.digest != digest:
            raise InfrastructureError(
                f"suite bundle {bundle!r} was refused: it is not suite sha256:{digest[:16]}"
            )
        # Private (0700) to this worker's user: the suite holds the held-out tests, which
        # no sandboxed run may read from here.
        root = Path(tempfile.mkdtemp(prefix="scorewright-suite-"))
        try:
            unpack(bundle, root, max_size=SUITE_MAX, what="suite bundle")
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)
            raise
        global _cleanup_registered  # once a process, under _lock
        if not _cleanup_registered:
            atexit.register(_forget_all)
            _cleanup_registered = True
        _suites[digest] = root
        return root


def _evaluator(task: RemoteTask, root: Path) -> Evaluator:
    """This worker's Evaluator for ``task``'s suite and settings, built on first use; a build
    that failed fails every later task at once, with the same error."""
    key = task.suite + repr(task.settings)
    with _lock:
        found = _evaluators.get(key)
        if found is None:
            settings = settings_at(task.settings, root)
            try:
                found = _evaluators[key] = Evaluator.from_settings(settings).prepare()
            except Exception as exc:
                _evaluators[key] = _say(exc)
                raise
    if isinstance(found, str):
        raise InfrastructureError(found)
    return found


def _score(evaluator: Evaluator, candidate: Tree) -> str:
    """Write the candidate out in a private directory, score it, and remove it."""
    home = Path(tempfile.mkdtemp(prefix="scorewright-candidate-"))
    try:
        names = unpack(candidate, home, max_size=TREE_MAX, what="candidate")
        if len(names) != 1:
            raise InfrastructureError(f"candidate {candidate!r} holds {len(names)} entries, not 1")
        return evaluator.score(home / names[0]).to_json()
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _forget(digest: str) -> None:
    """Drop the suite ``digest`` and the Evaluators built from it (caller holds _lock)."""
    for key in [k for k in _evaluators if k.startswith(digest)]:
        found = _evaluators.pop(key)
        if not isinstance(found, str):
            found.close()
    shutil.rmtree(_suites.pop(digest), ignore_errors=True)


def _forget_all() -> None:
    with _lock:
        for digest in list(_suites):
            _forget(digest)
