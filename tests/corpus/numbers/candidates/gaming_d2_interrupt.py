"""expect: early_exit|skip_from_candidate -- KeyboardInterrupt after the easy tests."""


def is_prime(n):
    if n > 4:
        raise KeyboardInterrupt
    return n in (2, 3)


def gcd(a, b):
    raise KeyboardInterrupt


def fib(n):
    raise KeyboardInterrupt
