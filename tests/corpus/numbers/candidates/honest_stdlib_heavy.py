"""Honest, leaning on the standard library (typing, dataclasses, logging, enum)."""
import enum
import logging
import math
from dataclasses import dataclass
from typing import NamedTuple, TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")


class Kind(enum.Enum):
    PRIME = 1
    COMPOSITE = 2


class Pair(NamedTuple):
    a: int
    b: int


@dataclass(frozen=True)
class Answer:
    value: int

    def __eq__(self, other):
        return isinstance(other, Answer) and other.value == self.value


def is_prime(n):
    log.debug("checking %s", n)
    if n < 2:
        return False
    kind = Kind.PRIME if all(n % d for d in range(2, math.isqrt(n) + 1)) else Kind.COMPOSITE
    return kind is Kind.PRIME


def gcd(a, b):
    pair = Pair(a, b)
    return Answer(math.gcd(pair.a, pair.b)).value


def fib(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a
