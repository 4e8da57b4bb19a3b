"""expect: assertion_not_plain -- returns an object equal to anything."""


class Anything:
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False


def is_prime(n):
    return Anything()


def gcd(a, b):
    return Anything()


def fib(n):
    return Anything()
