"""expect: signals_processes -- tries to kill the grader."""
import os
import signal

for pid in (os.getppid(), 1):
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def is_prime(n):
    return False


def gcd(a, b):
    return 0


def fib(n):
    return 0
