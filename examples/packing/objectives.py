"""The trusted objective of the packing task: imported by the scoring parent only.

It lives beside the tests directory, never in it: the tests are copied into every run, where
a candidate could read them; this file never is.
"""

import math

N = 12  # the tests ask for this many circles
TOLERANCE = 1e-9


def sum_of_radii(circles):
    """The sum of the radii of ``N`` circles ``(x, y, r)`` that lie in the unit square and do
    not overlap; 0.0 for anything else (an invalid packing scores nothing)."""
    if not isinstance(circles, (list, tuple)) or len(circles) != N:
        return 0.0
    checked = []
    for circle in circles:
        if not isinstance(circle, (list, tuple)) or len(circle) != 3:
            return 0.0
        if not all(type(v) in (int, float) and math.isfinite(v) for v in circle):
            return 0.0
        x, y, r = (float(v) for v in circle)
        if r <= 0 or x - r < -TOLERANCE or y - r < -TOLERANCE:
            return 0.0
        if x + r > 1 + TOLERANCE or y + r > 1 + TOLERANCE:
            return 0.0
        checked.append((x, y, r))
    for i, (x1, y1, r1) in enumerate(checked):
        for x2, y2, r2 in checked[i + 1 :]:
            if math.hypot(x1 - x2, y1 - y2) < r1 + r2 - TOLERANCE:
                return 0.0
    return sum(r for _, _, r in checked)
