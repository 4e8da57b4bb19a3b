"""The setup processes of a run, before any candidate code: S (detaches, enters the
namespaces), PID 1 (reaps, and as the spawner starts the test process and the candidate's
process on request) and the worker W's confinement before it becomes the test process
(``processes.py``, ``spawner.py``, ``confine.py``)."""
