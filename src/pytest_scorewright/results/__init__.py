"""From pytest's reports to a ScoreResult: phase reports (phases.py), one outcome per test
(outcomes.py), signals and the one result builder (measure.py), the evaluator's assembly of a
candidate's runs (assemble.py), and the terminal summary (summary.py)."""
