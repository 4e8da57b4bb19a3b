"""An LLM judge of program quality, anchored to execution and hardened against the words of
the program it reads (docs/judge.md). Runs in the trusted parent only, never in a sandbox.

- ``settings.py``: what a judge talks to and how (and where its key comes from)
- ``render.py``: the program with comments and literals neutralised
- ``prompt.py``: the rubric, the trusted facts, the one-time delimiter
- ``client.py``: one chat-completions request (the ``openai`` library)
- ``reply.py``: the reply parsed strictly
- ``assess.py``: the Judge (cache, budget, concurrency) and the injection canary
- ``attach.py``: the gate, and the judgement added to a ScoreResult
"""

from __future__ import annotations

from pytest_scorewright.judge.assess import Canary, Judge, Judgement
from pytest_scorewright.judge.judge_settings import JudgeSettings

__all__ = ["Canary", "Judge", "JudgeSettings", "Judgement"]
