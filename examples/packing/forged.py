"""A forged packing: circles that claim large radii but overlap. The parent scores what was
submitted, with its own checks: 0.0."""


def pack(n: int) -> list[tuple[float, float, float]]:
    return [(0.5, 0.5, 0.5)] * n
