"""What re-checked assertions cost: the instrumented bytecode against pytest's own.

The same generated test module (``--asserts`` passing assertions of each kind the parent
re-checks, on small plain values, and on a list of ``--size`` integers) is compiled twice:
with pytest's assertion rewriting alone, and with the instrumentation around it
(suite/instrument.py). Each test function is then called in this process, ``--runs`` times
per variant, interleaved; in the instrumented variant the operands go down a real pipe,
drained by a thread, as they go to the parent in a sandboxed run. Reported: the median time
per assertion of each variant, the difference (the cost of one re-check, in the child), and
the bytes sent per assertion. The parent's side (decoding and re-evaluating) is timed too,
on the messages the run produced. Last, a loop of ``10 x --asserts`` calls of a small
function in a test, both ways: what observing every call's result costs (one message per
site and test; the rest is the check of its type).

Usage::

    .venv/bin/python -m benchmarks.recheck_overhead [--runs 15] [--asserts 2000] [--size 100]

A timing benchmark: run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import ast
import os
import statistics
import sys
import threading
import time
import types
from collections.abc import Callable

from _pytest.assertion.rewrite import rewrite_asserts

from pytest_scorewright.child.test_process import recheck
from pytest_scorewright.integrity import recheck_evidence as parent
from pytest_scorewright.protocol.channel import FrameReader
from pytest_scorewright.suite.instrument import instrument_after, instrument_before


def suite_source(asserts: int, size: int) -> str:
    per_kind = max(1, asserts // 5)
    return f"""
def data(n):
    return list(range(n))


def test_small():
    for i in range({per_kind}):
        assert i + 1 == 1 + i
        assert "a" in "abc"
        assert i is not None
        assert i < i + 1


def test_list():
    for i in range({per_kind}):
        assert data({size}) == list(range({size}))
"""


CALLS_SOURCE = """
def f(i):
    return i


def test_calls():
    for i in range({calls}):
        f(i)
"""


def compiled(source: str, *, instrumented: bool) -> types.CodeType:
    tree = ast.parse(source)
    asserts = instrument_before(tree, "test_bench.py") if instrumented else {}
    rewrite_asserts(tree, source.encode(), "test_bench.py", None)
    if instrumented:
        instrument_after(tree, "test_bench.py", asserts)
    return compile(tree, "test_bench.py", "exec")


def load(code: types.CodeType) -> dict[str, Callable[[], None]]:
    namespace: dict[str, object] = {"__name__": "test_bench"}
    exec(code, namespace)  # noqa: S102 - our own generated module
    return {k: v for k, v in namespace.items() if k.startswith("test_") and callable(v)}


def time_once(tests: dict[str, Callable[[], None]]) -> float:
    started = time.perf_counter()
    for test in tests.values():
        recheck.new_test()
        test()
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--asserts", type=int, default=2000)
    parser.add_argument("--size", type=int, default=100)
    args = parser.parse_args(argv)
    source = suite_source(args.asserts, args.size)
    plain = load(compiled(source, instrumented=False))
    read, write = os.pipe()
    received = bytearray()

    def drain() -> None:
        while chunk := os.read(read, 1 << 16):
            received.extend(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    recheck.attach(write, None)
    recheck.PER_TEST = 10**9  # time every assertion, not the first 200 of each test
    recheck.PER_RUN_BYTES = 10**12
    instrumented = load(compiled(source, instrumented=True))
    calls_source = CALLS_SOURCE.format(calls=args.asserts * 10)
    calls_plain = load(compiled(calls_source, instrumented=False))
    calls_instrumented = load(compiled(calls_source, instrumented=True))
    per_kind = max(1, args.asserts // 5)
    count = 5 * per_kind
    times: dict[str, list[float]] = {"pytest": [], "instrumented": [], "calls": [], "wrapped": []}
    for _ in range(args.runs):
        times["pytest"].append(time_once(plain))
        times["instrumented"].append(time_once(instrumented))
        times["calls"].append(time_once(calls_plain))
        times["wrapped"].append(time_once(calls_instrumented))
    os.close(write)
    reader.join(timeout=10)
    messages = FrameReader(max_total=1 << 34).feed(bytes(received))
    started = time.perf_counter()
    for message in messages:
        sides = [parent.read_side(raw) for raw in message.get("sides", [])]
        if sides:
            parent.holds(message["op"], sides)
    parent_s = time.perf_counter() - started
    rechecks = sum("sides" in m for m in messages)
    base = statistics.median(times["pytest"]) / count
    inst = statistics.median(times["instrumented"]) / count
    print(f"python {sys.version.split()[0]}, {count} assertions per run, {args.runs} runs")
    print(f"pytest's bytecode:      {1e6 * base:8.2f} us per assertion (median)")
    print(f"instrumented bytecode:  {1e6 * inst:8.2f} us per assertion (median)")
    print(f"cost of a re-check:     {1e6 * (inst - base):8.2f} us in the child")
    print(f"sent:                   {len(received) / max(rechecks, 1):8.1f} bytes per assertion")
    print(f"parent, decode + check: {1e6 * parent_s / max(rechecks, 1):8.2f} us per assertion")
    print(f"(list operand: {args.size} integers)")
    calls = args.asserts * 10
    plain_call = statistics.median(times["calls"]) / calls
    wrapped_call = statistics.median(times["wrapped"]) / calls
    print(f"a call in a test:       {1e6 * plain_call:8.3f} us (pytest's bytecode)")
    print(f"the same call, wrapped: {1e6 * wrapped_call:8.3f} us (its result's kind observed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
