"""The test process: pytest's run of the trusted tests (``runner.py``, ``resume.py``), the
plugin that reports each phase to the parent (``reporter.py``), each test's limits
(``test_clock.py``), the trusted probes (``anchors.py``, ``recheck.py``, ``canaries.py``,
``bench.py``, ``timed_results.py``, ``identities.py``) and, with the candidate apart, its
proxy modules and stand-ins (``proxy.py``, ``stand_ins.py``)."""
