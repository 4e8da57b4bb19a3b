"""The reward service itself, in the server's process, apart from the wire that carries its
requests (the embedded server, reward_http.py, or an ASGI server, reward_asgi.py): its tasks,
its token, its result store, who is scored now and who waits, and where candidates are
scored (this process, pipeline processes or Ray's actors: reward_scoring.py)."""

from __future__ import annotations

import ipaddress
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

import pytest_scorewright.reward_shapes as shapes
from pytest_scorewright.errors import ConfigError, InfrastructureError
from pytest_scorewright.reward_admission import Admission, Metrics, default_queue
from pytest_scorewright.reward_scoring import Scoring
from pytest_scorewright.reward_store import Store, check_id, recorded
from pytest_scorewright.task_dirs import FITNESS, TaskDirs, check_name, reward_answer
from pytest_scorewright.verifiers import extract_code, judged

#: The environment variable holding the bearer token callers must present.
TOKEN_ENV = "SCOREWRIGHT_TOKEN"  # noqa: S105 - a variable's name, not a secret


class RewardService:
    """The tasks, the token (None: loopback only), the store, the counters and the slots of
    one service; :meth:`close` finishes with them once the wire has answered everyone."""

    def __init__(
        self,
        host: str,
        tasks: TaskDirs,
        token: str | None,
        in_flight: int,
        store: Store,
        queue: int | None = None,
        elsewhere: Scoring | None = None,
    ) -> None:
        if token is None and not loopback(host):
            raise ConfigError(
                f"serving on {host} beyond the loopback needs a token: set {TOKEN_ENV}"
            )
        if in_flight < 1:
            raise ConfigError(f"in_flight must be 1 or more, not {in_flight}")
        self.tasks = tasks
        self.token = token
        self.store = store
        self.elsewhere = elsewhere
        self.metrics = Metrics()
        self.slots = Admission(in_flight, queue if queue is not None else default_queue(in_flight))
        self.pool = ThreadPoolExecutor(in_flight, thread_name_prefix="scorewright-batch")

    def recover_in_background(self) -> None:
        """What a killed predecessor left unfinished, scored again now (a retry waits)."""
        threading.Thread(target=self._recover, name="scorewright-recover", daemon=True).start()

    def score(
        self, item: shapes.Item, *, wait: bool, recovering: bool = False
    ) -> dict[str, Any] | None:
        """One candidate's answer (kept under its id); None where no slot is free and
        ``wait`` is false."""
        task, source, rid = item
        with recorded(self.store, rid, task, source, recovering=recovering) as held:
            if held.stored:
                self.metrics.count("scorewright_stored_answers_total")
                answer: dict[str, Any] = held.answer
                return answer
            if not self.slots.acquire(wait=wait):
                return None
            try:
                answer = self.metrics.timed(
                    lambda: score_one(self.tasks, task, source, self.elsewhere)
                )
            finally:
                self.slots.release()
            if answer["reward"] is not None:  # a failure of ours is scored again if asked
                held.answer = answer
            return answer

    def score_all(self, items: list[shapes.Item]) -> list[dict[str, Any]]:
        return list(self.pool.map(lambda item: self.score(item, wait=True) or {}, items))

    def close(self) -> None:
        """After the wire has answered every request it took."""
        self.pool.shutdown()
        if self.elsewhere is not None:
            self.elsewhere.close()
        self.store.close()
        self.tasks.close()

    def _recover(self) -> None:
        for rid, task, source in self.store.unfinished():
            try:
                self.score((task, source, rid), wait=True, recovering=True)
            except Exception:  # a task gone since: asked again, it says so
                self.store.abandon(rid)


class Server(Protocol):
    """What every server of the service offers (reward_http.py, reward_asgi.py): the
    socketserver face ``scorewright serve`` drives."""

    service: RewardService
    server_address: Any

    def serve_forever(self) -> None: ...

    def shutdown(self) -> None:
        """Returns once serving has stopped, every request it took answered."""

    def server_close(self) -> None: ...


def score_one(
    tasks: TaskDirs, task: str, source: str, elsewhere: Scoring | None = None
) -> dict[str, Any]:
    """One candidate's answer: the reward and the loop-safe numbers; ``reward: None`` with
    the reason where it could not be scored for a reason of ours. Scored ``elsewhere``
    (Ray's actors, pipeline processes) where given, else in this process."""
    scorer = elsewhere.scorer(tasks, task) if elsewhere is not None else tasks.evaluator(task)
    result = scorer.score_source(extract_code(source))
    try:
        _, score = judged(result, FITNESS)
    except InfrastructureError as exc:
        return {"reward": None, "verdict": "not_scored", "reason": str(exc)}
    answer = reward_answer(result, score)
    return {"reward": answer.pop("score"), **answer}


def score_request(tasks: TaskDirs, body: dict[str, Any]) -> dict[str, Any]:
    """The answer to one ``/score`` request's body, unkept (a ConfigError for a bad one)."""
    task, source, _ = score_item(body)
    tasks.evaluator(task)  # an unknown task is a ConfigError before anything runs
    return score_one(tasks, task, source)


def score_item(body: dict[str, Any]) -> shapes.Item:
    """A ``/score`` body's task, source and id, checked."""
    task = check_name(body.get("task"))
    source = body.get("source")
    if not isinstance(source, str):
        raise ConfigError("the body needs 'source': the candidate's code, a string")
    return task, source, check_id(body.get("id"))


def loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
