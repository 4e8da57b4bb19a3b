"""The trusted suite, learned and prepared once, below the run planner: its collection
(``collect.py``: the expected test ids), pytest's configuration prepared once
(``prepared.py``, ``early_hooks.py``), and the tests' rewritten bytecode (``rewritten.py``,
``instrument.py``: assertions re-checked in the parent). Runs only in trusted processes."""
