"""The static scan: each rule on a small source, and honest idioms that must stay silent."""

from __future__ import annotations

import textwrap

import pytest

from pytest_scorewright.integrity.static_scan import scan_source, to_reasons


def codes(source: str) -> set[str]:
    return {hit.code for hit in scan_source(textwrap.dedent(source), "c.py")}


@pytest.mark.parametrize(
    ("source", "code"),
    [
        ("import sys\nx = sys._getframe(1).f_locals", "frame_introspection"),
        ("import inspect\ninspect.stack()", "frame_introspection"),
        ("import gc\ngc.get_objects()", "gc_introspection"),
        ("import _pytest.reports", "imports_test_machinery"),
        ("import pytest", "imports_test_machinery"),
        ("def pytest_runtest_makereport(item, call): pass", "imports_test_machinery"),
        ("import os\nos._exit(0)", "early_exit_call"),
        ("import sys\nsys.exit(0)", "early_exit_call"),
        ("raise KeyboardInterrupt", "early_exit_call"),
        ("import atexit\natexit.register(print)", "atexit_registered"),
        ("import time\ntime.perf_counter = lambda: 0", "timer_patched"),
        ("import time\nsetattr(time, 'monotonic', None)", "timer_patched"),
        ("class A:\n    def __eq__(self, o):\n        return True", "always_equal"),
        ("class A:\n    __eq__ = lambda self, o: True", "always_equal"),
        ("class N(int):\n    def __eq__(self, o):\n        return int(self) == o", "always_equal"),
        ("open('../tests/test_x.py')", "reads_tests"),
        ("import glob\nglob.glob('tests/*.py')", "reads_tests"),
        ("import os\nos.environ.get('PYTEST_CURRENT_TEST')", "detects_test_environment"),
        ("import math\nmath.gcd = lambda a, b: 1", "patches_runtime"),
        ("import sys\nsys.modules['x'] = None", "patches_runtime"),
        ("import os\nos.kill(1, 9)", "signal_tampering"),
        ("import os\nos.write(3, b'x')", "raw_fd_access"),
        ("exec(''.join(['pri', 'nt()']))", "dynamic_code"),
        ("import ctypes", "raw_memory_access"),
        ("def f(:", "unparseable_source"),
    ],
)
def test_each_rule_fires(source: str, code: str) -> None:
    assert code in codes(source)


def test_honest_idioms_stay_silent() -> None:
    source = '''
    """Solution module. The tests live in tests/test_solution.py (this docstring is prose)."""
    import decimal
    import functools
    import logging
    import math
    import sys
    from dataclasses import dataclass
    from typing import NamedTuple
    from urllib.parse import urlparse

    sys.setrecursionlimit(10_000)
    decimal.getcontext().prec = 50
    logging.basicConfig(level=logging.INFO)
    MODE = "test"
    CSS = "hidden"

    class Point(NamedTuple):
        x: int
        y: int

    @dataclass
    class Money:
        cents: int

        def __eq__(self, other):
            return isinstance(other, Money) and other.cents == self.cents

    @functools.lru_cache(maxsize=None)
    def fib(n):
        return n if n < 2 else fib(n - 1) + fib(n - 2)

    if __name__ == "__main__":
        import argparse
        print(fib(int(sys.argv[1])))
        sys.exit(0)
    '''
    assert codes(source) == set()


def test_reasons_name_the_first_place_and_count_the_rest() -> None:
    hits = scan_source("import gc\ngc.get_objects()\ngc.get_referrers(1)\n", "c.py")
    (reason,) = to_reasons(hits)
    assert reason.detail == "c.py:2: uses gc.get_objects (and 1 more)"
