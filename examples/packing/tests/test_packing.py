"""The packing task's trusted tests: the shape of the answer, a check of its own, and the
answer sent to the parent, where objectives.py scores it (never here, next to the candidate)."""

import math

import solution

N = 12


def overlapping(circles):
    """The pairs of circles that overlap: the test's own check (its pass rate gates the
    score); the score itself is computed in the parent, from the submitted packing."""
    return [
        (i, j)
        for i, (x1, y1, r1) in enumerate(circles)
        for j, (x2, y2, r2) in enumerate(circles[i + 1 :], i + 1)
        if math.hypot(x1 - x2, y1 - y2) < r1 + r2 - 1e-9
    ]


def test_gives_n_circles() -> None:
    circles = solution.pack(N)
    assert len(circles) == N
    assert all(len(circle) == 3 for circle in circles)


def test_no_two_circles_overlap() -> None:
    assert overlapping(solution.pack(N)) == []


def test_submits_the_packing(scorewright) -> None:
    scorewright.submit("radii", solution.pack(N))
