# -*- coding: utf-7 -*-
"""expect: frame_introspection -- UTF-7 source: read as UTF-8 it shows no frame walk."""
import sys


def _expected():
    return sys.+AF8-getframe(2).f+AF8-locals.get("expected")


def is_prime(n):
    return _expected()


def gcd(a, b):
    return _expected()


def fib(n):
    return _expected()
