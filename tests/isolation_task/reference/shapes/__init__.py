"""A small package: what the tests import through proxies when the candidate runs apart."""

import dataclasses
import decimal
import enum
import fractions
import json
import warnings
from collections import Counter, OrderedDict, namedtuple

from shapes import geometry
from shapes.geometry import area

VERSION = "1.2"
LIMITS = {"max": 10, "names": ("a", "b")}
Point = namedtuple("Point", "x y")


class Color(enum.Enum):
    RED = 1
    GREEN = 2


class ShapeError(ValueError):
    """Raised for a shape that cannot exist."""


class NegativeSide(ShapeError):
    pass


class OldWarning(DeprecationWarning):
    pass


@dataclasses.dataclass
class Box:
    width: float
    height: float

    def area(self):
        return area(self.width, self.height)

    def scale(self, factor):
        self.width *= factor
        self.height *= factor
        return self

    def __len__(self):
        return 4

    def __iter__(self):
        return iter([self.width, self.height])

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __add__(self, other):
        return Box(self.width + other.width, self.height + other.height)


class Counter2:
    """State kept between calls, as real code keeps it."""

    def __init__(self):
        self.n = 0

    def bump(self):
        self.n += 1
        return self.n


def make_box(width, height):
    if width < 0 or height < 0:
        raise NegativeSide(f"negative side: {min(width, height)}")
    return Box(width, height)


def sort_in_place(items):
    items.sort()


def fill(mapping, grid):
    mapping["done"] = True
    grid[0][0] = 9


def apply_all(function, values):
    return [function(v) for v in values]


def squares():
    n = 0
    while True:
        yield n * n
        n += 1


def describe(box):
    print(f"box {box.width}x{box.height}")
    return f"{box.width}x{box.height}"


def old_api():
    warnings.warn("old_api is going away", OldWarning, stacklevel=2)
    return 1


def parse(text):
    return json.loads(text)


def numbers():
    return {
        "dec": decimal.Decimal("1.10"),
        "frac": fractions.Fraction(1, 3),
        "big": 2**200,
        "nan": float("nan"),
        "inf": float("inf"),
        "bytes": b"\x00\xff",
        "tuple_key": {(1, 2): "pair"},
        "set": {1, 2},
        "counter": Counter("aab"),
        "ordered": OrderedDict(a=1),
        "point": Point(1, 2),
    }


def read_file(path):
    with open(path, encoding="utf-8") as fh:
        return fh.read().upper()


def helper():
    return "real"


def uses_helper():
    return helper() + "!"


def same(x):
    return x


def exit_with(code):
    raise SystemExit(code)


def color(name):
    return Color[name]


def total_of(box_a, box_b):
    return (box_a + box_b).area()


def describe_geometry():
    return geometry.UNIT


class Ring:
    """Indexed and sliced, as a sequence of its own."""

    def __init__(self, items):
        self.items = list(items)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return self.items[index]
        return self.items[index % len(self.items)]
