"""Count the primes below n, as fast as you can (the tests import this as `solution`)."""

# EVOLVE-BLOCK-START


def count_primes(n: int) -> int:
    # Trial division: right, and slow.
    count = 0
    for k in range(2, n):
        if all(k % d for d in range(2, int(k**0.5) + 1)):
            count += 1
    return count


# EVOLVE-BLOCK-END
