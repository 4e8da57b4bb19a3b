"""A better packing: a 3 x 3 grid of circles of radius 1/6, and three small circles in
three of the grid's four gaps (sum of radii about 1.707)."""

import math


def pack(n: int) -> list[tuple[float, float, float]]:
    r = 1 / 6
    grid = [((2 * (i % 3) + 1) * r, (2 * (i // 3) + 1) * r, r) for i in range(9)]
    small = (math.sqrt(2) - 1) * r * 0.999
    gaps = [(1 / 3, 1 / 3, small), (2 / 3, 1 / 3, small), (1 / 3, 2 / 3, small)]
    return (grid + gaps)[:n]
