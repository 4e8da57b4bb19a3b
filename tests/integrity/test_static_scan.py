"""The static scan: each rule on a small source, and honest idioms that must stay silent."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from pytest_scorewright.integrity import static_scan
from pytest_scorewright.integrity.static_scan import (
    reference_scan,
    scan_path,
    scan_source,
    to_reasons,
)


def codes(source: str) -> set[str]:
    return {hit.code for hit in scan_source(textwrap.dedent(source), "c.py")}


@pytest.mark.parametrize(
    ("source", "code"),
    [
        ("import sys\nx = sys._getframe(1).f_locals", "source_frame_introspection"),
        ("import inspect\ninspect.stack()", "source_frame_introspection"),
        ("import gc\ngc.get_objects()", "source_gc_introspection"),
        ("import _pytest.reports", "source_imports_test_machinery"),
        ("import pytest", "source_imports_test_machinery"),
        ("def pytest_runtest_makereport(item, call): pass", "source_pytest_hook"),
        ("import os\nos._exit(0)", "source_early_exit_call"),
        ("import sys\nsys.exit(0)", "source_early_exit_call"),
        ("raise KeyboardInterrupt", "source_early_exit_call"),
        ("import atexit\natexit.register(print)", "source_atexit"),
        ("import time\ntime.perf_counter = lambda: 0", "source_timer_patched"),
        ("import time\nsetattr(time, 'monotonic', None)", "source_timer_patched"),
        ("class A:\n    def __eq__(self, o):\n        return True", "source_always_equal"),
        ("class A:\n    __eq__ = lambda self, o: True", "source_always_equal"),
        (
            "class N(int):\n    def __eq__(self, o):\n        return int(self) == o",
            "source_always_equal",
        ),
        ("open('../tests/test_x.py')", "source_reads_tests"),
        ("import glob\nglob.glob('tests/*.py')", "source_reads_tests"),
        (
            "import os\nos.environ.get('PYTEST_CURRENT_TEST')",
            "source_detects_test_environment",
        ),
        ("import sys\nprint(sys.argv)", "source_reads_argv"),
        ("import math\nmath.gcd = lambda a, b: 1", "source_patches_runtime"),
        ("import sys\nsys.modules['x'] = None", "source_patches_runtime"),
        ("import os\nos.kill(1, 9)", "source_signal_tampering"),
        ("import os\nos.write(3, b'x')", "source_raw_fd_access"),
        ("exec(''.join(['pri', 'nt()']))", "source_dynamic_code"),
        ("import ctypes", "source_raw_memory_access"),
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
    assert reason.severity == "hint"


def test_only_patterns_that_cannot_be_innocent_are_more_than_hints() -> None:
    source = "import os\ndef pytest_configure(config): pass\nos.environ['PYTEST_VERSION']\n"
    severities = {r.code: r.severity for r in to_reasons(scan_source(source, "c.py"))}
    assert severities == {
        "source_pytest_hook": "gaming",
        "source_detects_test_environment": "gaming",
    }


def test_a_syntax_error_is_no_finding_the_failed_import_is_the_runs_error() -> None:
    assert scan_source("def f(:\n", "c.py") == []
    assert scan_source(b"\x00\x00", "c.py") == []


def test_a_coding_cookie_cannot_hide_source_from_the_scan() -> None:
    # UTF-7 spells the call to sys._getframe with "+-" escapes that a UTF-8 reading of the
    # file never sees as code; Python decodes the cookie, and so does the scan.
    hidden = "import sys\nx = sys._getframe(1).f_locals\n".encode("utf-7")
    source = b"# -*- coding: utf-7 -*-\n" + hidden.replace(b"_", b"+AF8-")
    assert b"_getframe" not in source
    found = {hit.code for hit in scan_source(source, "c.py")}
    assert found == {"source_encoding", "source_frame_introspection"}


def test_against_the_reference_only_what_the_candidate_adds_is_found(tmp_path: Path) -> None:
    reference = tmp_path / "reference"
    candidate = tmp_path / "candidate"
    for root in (reference, candidate):
        (root / "pkg").mkdir(parents=True)
        (root / "pkg" / "frames.py").write_text(
            "import sys\ndef who():\n    return sys._getframe(1)\n"
        )
    # A mutant: the same patterns, moved down a line, and one new one.
    (candidate / "pkg" / "frames.py").write_text(
        "import sys\n\ndef who():\n    return sys._getframe(2)\nimport ctypes\n"
    )
    (candidate / "pkg" / "lib.py").write_bytes(b"x = 1\n")
    (reference / "pkg" / "lib.py").write_bytes(b"x = 1\n")
    alone = {r.code for r in scan_path(candidate)}
    relative = {r.code for r in scan_path(candidate, reference_scan(reference))}
    assert alone == {"source_frame_introspection", "source_raw_memory_access"}
    assert relative == {"source_raw_memory_access"}


def test_compiled_code_and_files_past_the_caps_are_reasons_not_silence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "solution.pyc").write_bytes(b"\x00" * 16)
    (tmp_path / "native.cpython-311-x86_64-linux-gnu.so").write_bytes(b"\x7fELF")
    (tmp_path / "big.py").write_text("x = 1\n" * 10)
    monkeypatch.setattr(static_scan, "MAX_FILE_BYTES", 20)
    reasons = scan_path(tmp_path)
    assert [(r.code, r.severity) for r in reasons] == [("unscanned", "hint")]
    assert "(and 2 more)" in reasons[0].detail
    details = [h.file for h in static_scan.scan_tree(tmp_path).hits]
    assert sorted(details) == ["big.py", "native.cpython-311-x86_64-linux-gnu.so", "solution.pyc"]


def test_files_past_the_count_cap_are_reasons_not_silence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("a.py", "b.py", "c.py"):
        (tmp_path / name).write_text("import sys\nsys._getframe(1)\n")
    monkeypatch.setattr(static_scan, "MAX_FILES", 2)
    codes = {r.code: r.detail for r in scan_path(tmp_path)}
    assert codes["unscanned"] == "c.py:0: not scanned (past the first 2 files)"
    assert "source_frame_introspection" in codes
