"""Scoring many candidates: a bounded window of work in flight here (``window.py``), or on an
executor's workers (``dispatch.py`` the client's side, ``remote.py`` the worker's), where the
suite travels once as a bundle keyed by its hash (``suite.py``) and each candidate as its
files (``content.py``), so no worker needs the client's file system."""
