"""OpenEvolve evaluation file for the packing task: the trusted tests run each program in the
sandbox; objectives.py scores the packing it submits, in this process; combined_score is that
score while every test passes (the `objective` fitness)."""

from pathlib import Path

from pytest_scorewright.openevolve import evaluator

_task = Path(__file__).resolve().parent
_ev = evaluator(
    _task / "tests",
    reference=_task / "reference",
    objectives={"radii": f"{_task / 'objectives.py'}:sum_of_radii"},
    fitness="objective",
    fitness_config={"objective": "radii"},
    timeout=20,
)
evaluate, evaluate_stage1, evaluate_stage2 = _ev.evaluate, _ev.evaluate_stage1, _ev.evaluate_stage2
