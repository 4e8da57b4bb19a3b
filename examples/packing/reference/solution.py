"""The reference packing: a 4 x 3 grid of equal circles (sum of radii 1.5)."""


def pack(n):
    r = 1 / 8
    return [((2 * (i % 4) + 1) * r, (2 * (i // 4) + 1) * r, r) for i in range(n)]
