"""Process bodies that build an Evaluator: an executor's worker (``remote_worker.py``) and a
scoring pipeline's process (``pipeline_process.py``). Above the Evaluator, below the faces:
the fan-out that starts them reaches them by name only (a module path, ``python -m``)."""
