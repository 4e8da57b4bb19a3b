"""The trusted parent's side of a run: plan it (``plan.py``: work dir, uid, Landlock policy,
pytest's command line), fork it (``launch.py``), watch its clock and enforce its deadline
(``deadline.py``), kill and reap what is left (``sweep.py``); what this host allows
(``host.py``) and what a run's facts guarantee (``guarantees.py``). Never imports candidate
code. The messages it exchanges with the sandboxed processes are in ``protocol/``."""
