"""expect: assertion_not_plain -- returns a lazy number whose work runs in __eq__, after the
benchmark's timer stopped."""
import re


def parse_duration(text):
    match = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?", text)
    if not text or not match:
        raise ValueError(text)
    h, m, s = (int(x or 0) for x in match.groups())
    return 3600 * h + 60 * m + s


def is_valid_email(text):
    return re.fullmatch(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}", text) is not None


class _Lazy:
    def __init__(self, n):
        self.n = n

    def _value(self):
        return sum(p for p in range(2, self.n) if all(p % d for d in range(2, int(p**0.5) + 1)))

    def __eq__(self, other):
        return self._value() == other

    def __int__(self):
        return self._value()


def sum_primes(n):
    return _Lazy(n)


def sort_numbers(values):
    return sorted(values)
