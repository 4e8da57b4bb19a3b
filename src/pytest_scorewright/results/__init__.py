"""From per-test reports to a ScoreResult's parts, shared by plugin mode and the evaluator:
one outcome per test (``outcomes.py``), signals and the one result builder (``measure.py``),
bounded messages (``bound.py``), CTRF export (``ctrf.py``) and the terminal summary
(``summary.py``)."""
