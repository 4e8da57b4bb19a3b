"""The contract both sides speak, below both: every message and type that crosses a process
boundary (``wire.py``, one table), their framing (``channel.py``), phase reports reduced to
plain data (``phases.py``), the call channel between the test process and the candidate's
process (``rpc.py``), and the one encoding of exact builtin values (``values.py``).

Imports nothing of this project but ``limits``, ``errors`` and ``_text``: the sandboxed
processes and the trusted parent both import it, so it holds no logic of either.
"""
