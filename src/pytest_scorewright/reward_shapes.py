"""The trainers' request and answer shapes the reward service also speaks, each read from the
trainer's own code (docs/adapters.md cites where):

- NeMo Gym's resources-server ``POST /verify``: a ``BaseVerifyRequest``
  (``responses_create_params``, ``response``: an OpenAI Responses object, plus the task's own
  fields; ours is ``task``), answered with the request's fields and ``reward`` (a float), as
  ``BaseVerifyResponse`` (nemo_gym/base_resources_server.py);
- OpenRLHF's remote reward model ``POST /get_reward``: ``{"query": [...], "prompts": [...],
  "labels": [...]}`` (openrlhf/utils/remote_rm_utils.py ``remote_rm_fn``), answered with
  ``{"rewards": [...]}`` (its default ``score_key``); a query is the prompt and the response,
  so the response is the query less its prompt; the label names the task;
- ``POST /batch_reward``: ours, ``{"items": [{"task", "source", "id"?}, ...]}`` answered with
  ``{"rewards": [...], "results": [...]}`` in the same order.

Neither trainer's schema has room for "no reward": a reward that could not be measured (a
failure of ours or the machine's) makes the whole answer a ``503`` with the reason, which
their HTTP clients raise or retry, never a 0.0 they would train on.
"""

from __future__ import annotations

from typing import Any

from pytest_scorewright.errors import ConfigError
from pytest_scorewright.reward_store import check_id
from pytest_scorewright.task_dirs import check_name

#: Most items in one batch (``/get_reward``, ``/batch_reward``).
MAX_ITEMS = 256

#: One candidate to score: (task, source, request id or None).
Item = tuple[str, str, str | None]


def verify_item(body: dict[str, Any]) -> Item:
    """NeMo Gym's ``/verify``: the task, and the last assistant text of ``response``."""
    response = body.get("response")
    output = response.get("output") if isinstance(response, dict) else None
    if not isinstance(output, list):
        raise ConfigError("the body needs 'response' with an 'output' list (a Responses object)")
    texts = [
        part["text"]
        for item in output
        if isinstance(item, dict) and item.get("type") == "message"
        for part in item.get("content") or []
        if isinstance(part, dict) and part.get("type") == "output_text"
        and isinstance(part.get("text"), str)
    ]  # fmt: skip
    if not texts:
        raise ConfigError("the response has no assistant output_text to score")
    task = check_name(body.get("task"))
    return task, texts[-1], check_id(body.get("id"))


def verify_answer(body: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
    """``BaseVerifyResponse``: the request's fields, the reward, and ours beside them."""
    details = {k: v for k, v in answer.items() if k != "reward"}
    return {**body, "reward": answer["reward"], "scorewright": details}


def get_reward_items(body: dict[str, Any]) -> list[Item]:
    """OpenRLHF's ``/get_reward``: one candidate per query, its task its label."""
    queries, prompts, labels = body.get("query"), body.get("prompts"), body.get("labels")
    if not isinstance(queries, list) or not isinstance(labels, list):
        raise ConfigError("the body needs 'query' and 'labels': lists of strings")
    if not (_strings(queries) and _strings(labels)):
        raise ConfigError("the body needs 'query' and 'labels': lists of strings")
    if prompts is None:
        prompts = [""] * len(queries)
    if not _strings(prompts) or not len(queries) == len(prompts) == len(labels):
        raise ConfigError("'query', 'prompts' and 'labels' must be lists of one length")
    _bounded(len(queries))
    return [
        (check_name(label), query.removeprefix(prompt), None)
        for query, prompt, label in zip(queries, prompts, labels, strict=True)
    ]


def batch_items(body: dict[str, Any]) -> list[Item]:
    """Ours: ``{"items": [{"task": NAME, "source": CODE, "id": ID?}, ...]}``."""
    items = body.get("items")
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise ConfigError("the body needs 'items': a list of {task, source} objects")
    _bounded(len(items))
    found = []
    for item in items:
        source = item.get("source")
        if not isinstance(source, str):
            raise ConfigError("each item needs 'source': the candidate's code, a string")
        found.append((check_name(item.get("task")), source, check_id(item.get("id"))))
    return found


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _bounded(count: int) -> None:
    if not 1 <= count <= MAX_ITEMS:
        raise ConfigError(f"a batch holds 1 to {MAX_ITEMS} items, not {count}")
