"""An honest solution built with metaprogramming: code generated and compiled at run time under
a made-up name, dataclasses, enums, a namedtuple, inspect.signature, warnings and a thread pool."""
import enum
import functools
import inspect
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import NamedTuple

_SOURCE = """
def is_prime(n):
    if n < 2:
        return False
    d = 2
    while d * d <= n:
        if n % d == 0:
            return False
        d += 1
    return True
"""
_generated = {}
exec(compile(_SOURCE, "<generated is_prime>", "exec"), _generated)


class Kind(enum.Enum):
    ZERO = 0
    OTHER = 1


class Pair(NamedTuple):
    a: int
    b: int


@dataclass(frozen=True)
class Step:
    pair: Pair

    def next(self):
        return Step(Pair(self.pair.b, self.pair.a % self.pair.b))


def is_prime(n):
    return _generated["is_prime"](n)


def gcd(a, b):
    assert list(inspect.signature(gcd).parameters) == ["a", "b"]
    step = Step(Pair(abs(a), abs(b)))
    while step.pair.b:
        step = step.next()
    return step.pair.a


@functools.lru_cache(maxsize=None)
def fib(n):
    if Kind(min(n, 1)) is Kind.ZERO:
        return 0
    if n > 90:
        warnings.warn("large fib", stacklevel=2)
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(_fib, n).result()


def _fib(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a
