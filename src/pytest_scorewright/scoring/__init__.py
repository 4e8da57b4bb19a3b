"""The evaluator's machinery, behind ``Evaluator``: its settings (``settings.py``), a run
from launch to verdict (``runs.py``: the budget split, the launch, the wait, the judgement),
everything learned from the reference as one frozen object (``reference.py``), which tests
apply (``applicable.py``), objectives scored in the parent (``objectives.py``), and a
candidate's runs assembled into a ScoreResult (``assemble.py``). Runs only in the trusted
parent."""
