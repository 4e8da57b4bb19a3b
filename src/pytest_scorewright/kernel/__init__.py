"""Thin wrappers over Linux: system calls through ctypes (``linux.py``), namespaces
(``namespaces.py``), Landlock (``landlock.py``), a subreaper's reaping (``reaper.py``) and
``/proc`` (``procfs.py``). Below both sides: the parent plans and probes with them, the
sandboxed processes confine themselves with them; no judgement and no plans here."""
