"""The warm parent: a clean, single-threaded process that imports pytest and the suite's
preparation once and forks every run (``server.py`` the process itself, ``parent.py`` the
caller's handle on it, and the requests they exchange)."""
