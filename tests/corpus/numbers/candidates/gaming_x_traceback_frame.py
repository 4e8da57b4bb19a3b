"""expect: frame_introspection -- reaches the test's frame through an exception's traceback,
with the attribute name built at run time (no literal for a scan to find)."""


def _expected():
    try:
        raise LookupError
    except LookupError as exc:
        frame = getattr(exc.__traceback__, "tb_" + "frame")
    for _ in range(3):
        frame = getattr(frame, "f_" + "back")
        found = getattr(frame, "f_" + "locals").get("expected")
        if found is not None:
            return found
    return None


def is_prime(n):
    return _expected()


def gcd(a, b):
    return _expected()


def fib(n):
    return _expected()
