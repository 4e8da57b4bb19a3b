"""The candidate's own process (isolation by process): it imports the candidate and answers
the test process's calls (``candidate.py``).

Everything here runs in the candidate's domain, apart from the tests. It imports nothing of
the test process's side: only ``protocol``, ``kernel``, ``limits``, ``errors``, ``_text``,
and the two modules armed in both sandboxed processes (``child.monitor``,
``child.imports``); ``tests/test_layout.py`` enforces it. The one exception is data: the
test process's probes are loaded by name to be watched (``_test_process_identities``), never
used."""
