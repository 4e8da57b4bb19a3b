"""Circle packing: place 12 circles in the unit square, without overlap, with the largest
sum of radii (the tests import this as `solution`; objectives.py scores it)."""

# EVOLVE-BLOCK-START


def pack(n: int) -> list[tuple[float, float, float]]:
    # A row of small circles: valid, and far from the best (sum of radii 0.48).
    r = 0.04
    return [(r + 2 * r * i, 0.5, r) for i in range(n)]


# EVOLVE-BLOCK-END
