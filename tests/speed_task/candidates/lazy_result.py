"""Returns at once an object that counts the primes only when it is compared or read."""


class _Count:
    def __init__(self, n):
        self.n = n

    def _value(self):
        n = self.n
        if n < 3:
            return 0
        sieve = [True] * n
        sieve[0] = sieve[1] = False
        for i in range(2, int(n**0.5) + 1):
            if sieve[i]:
                for j in range(i * i, n, i):
                    sieve[j] = False
        return sum(sieve)

    def __eq__(self, other):
        return self._value() == other

    def __int__(self):
        return self._value()

    __hash__ = None


def count_primes(n):
    return _Count(n) if n > 1000 else _Count(n)._value()
