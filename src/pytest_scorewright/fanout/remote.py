"""What travels between the client and an executor's worker: a candidate's try
(:class:`RemoteTask`), the worker's answer (:class:`Reply`), the suite's bundle, and
:func:`score_remote`, the function the client submits, which runs the worker's body
(workers/remote_worker.py) by name: the client's side never imports the Evaluator.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Literal

from pytest_scorewright._version import __version__
from pytest_scorewright.fanout.content import TREE_MAX, Tree
from pytest_scorewright.scoring.settings import EvaluatorSettings

#: The most a suite's bundle may take unpacked: visible tests, held-out tests, a reference
#: and a few support files, each within one tree's bound.
SUITE_MAX = 8 * TREE_MAX


@dataclass(frozen=True)
class RemoteTask:
    """One try of one candidate, as it travels to a worker: the suite's key and the settings
    with paths inside its bundle (fanout/suite_bundle.py), the candidate's files, and a
    token of its own."""

    suite: str
    settings: EvaluatorSettings
    candidate: Tree
    #: Unique to this try: an executor that keys work by its arguments (Dask) must not take
    #: a second try, or a second copy of a candidate, for the first.
    token: str
    #: The client's pytest-scorewright: a worker with another scores nothing.
    version: str = __version__

    def __repr__(self) -> str:
        return f"RemoteTask({self.token}, suite sha256:{self.suite[:16]}, {self.candidate!r})"

    def __dask_tokenize__(self) -> str:
        return self.token


@dataclass(frozen=True)
class Reply:
    """A worker's answer: ``result`` (``text`` is the ScoreResult's JSON), ``need_suite``
    (this worker has no copy of the suite: send the bundle), ``failed`` (ours or the
    worker's: try again, ``text`` says what) or ``refused`` (trying again cannot help)."""

    kind: Literal["result", "need_suite", "failed", "refused"]
    text: str
    worker: str


#: The worker's body, imported by name where the task runs (a process body that builds an
#: Evaluator: workers/remote_worker.py).
WORKER = "pytest_scorewright.workers.remote_worker"


def score_remote(task: RemoteTask, suite: Tree | None = None) -> Reply:
    """Run on an executor's worker: score ``task``'s candidate with this process's
    Evaluator for its suite and settings (built on first use from the bundle ``suite``, which
    only a worker without a copy needs), and say how it went; never raises."""
    reply: Reply = importlib.import_module(WORKER).score(task, suite)
    return reply


def held(suite: Tree) -> Tree:
    """The suite's bundle as a Dask task's result: the cluster keeps it for every task that
    names it, and computes it again if the worker holding it is lost."""
    return suite
