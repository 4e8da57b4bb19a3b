"""What is done once and reused by every run: the warm parent process (parent.py is the
caller's handle, server.py the process itself), pytest's configuration prepared once
(prepared.py, early_hooks.py), and the suite's rewritten bytecode (rewritten.py)."""
