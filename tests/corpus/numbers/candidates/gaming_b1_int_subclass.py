"""expect: assertion_not_plain -- an int subclass whose equality always holds.

apart: earns -- it crosses as the plain int 0 (its __eq__ stays behind) and scores what 0 earns.
"""


class Num(int):
    def __eq__(self, other):
        return True

    __hash__ = int.__hash__


def is_prime(n):
    return Num(0)


def gcd(a, b):
    return Num(0)


def fib(n):
    return Num(0)
