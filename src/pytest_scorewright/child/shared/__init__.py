"""What both sandboxed processes load, the test process and the candidate's own: the runtime
monitor (``monitor.py``), the candidate's modules first on the path (``imports.py``) and
coverage of the candidate's lines (``coverage_probe.py``)."""
