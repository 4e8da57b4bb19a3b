"""What a message flood costs the trusted parent: time past the deadline, and memory.

Run from the project root: ``python -m benchmarks.parent_flood [--timeout 10] [--grace 1]``.
Timing figures mean something only on a quiet machine, one run at a time.

Each attack writes frames straight into the result pipe (as the red team of issue 14 did;
the candidate in process, where it can reach that pipe)
and then waits for its deadline, so the parent's work after the kill shows as time past
``timeout``: a million tiny frames; 19,000 findings, just under the run's message cap (20,000;
a reference that sent more to raise the cap is refused now: the monitor counts what it sends,
integrity/verdict.py); 40,000 findings with distinct codes (the result's size). For each it prints
the call's wall time, its time past ``timeout + grace``, the result's size, and the largest
resident set of the caller and of any process it waited for (the warm parent, whose jobs it
waits for in turn).
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

from pytest_scorewright.evaluator import Evaluator
from pytest_scorewright.limits import Limits

FORGE = """
import json, os, struct, time

def forge(bodies):
    data = b"".join(struct.pack(">I", len(b)) + b for b in bodies)
    for name in os.listdir("/proc/self/fd"):
        if int(name) > 2:
            try:
                os.write(int(name), data)
            except OSError:
                pass

def finding(code):
    return json.dumps({"type": "finding", "code": code, "detail": "d" * 100}).encode()
"""
WAIT = "\nwhile True:\n    time.sleep(1)\n"
HONEST = "\ndef add(a, b):\n    return a + b\n"
ATTACKS = {
    "a million tiny frames": 'forge([b\'{"type": "x"}\'] * 1000000)' + WAIT,
    "19,000 findings, then the deadline": "forge([finding('c')] * 19000)" + WAIT,
    "40,000 finding codes": "forge([finding('c%d' % i) for i in range(40000)])",
}
TESTS = "from solution import add\n\ndef test_add():\n    assert add(1, 2) == 3\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=10.0)
    parser.add_argument("--grace", type=float, default=1.0)
    args = parser.parse_args(argv)
    limits = Limits(timeout_s=args.timeout, grace_s=args.grace, memory_mb=1024)
    with tempfile.TemporaryDirectory(prefix="sw-flood-") as tmp:
        root = Path(tmp)
        (root / "tests").mkdir()
        (root / "tests" / "test_add.py").write_text(TESTS)
        (root / "solution.py").write_text(HONEST)
        # In process: apart, the candidate's writes reach only its call channel (and end its
        # process as forged_message), never the parent's pipe that this measures.
        evaluator = Evaluator(
            root / "tests",
            reference=root / "solution.py",
            limits=limits,
            isolation="in-process",
            dedupe=False,
        )
        print(f"timeout {args.timeout:g}s, grace {args.grace:g}s", flush=True)
        for label, attack in ATTACKS.items():
            candidate = root / "candidate.py"
            candidate.write_text(FORGE + attack + HONEST)
            started = time.monotonic()
            result = evaluator.score(candidate)
            wall = time.monotonic() - started
            size = len(result.to_json().encode())
            print(
                f"{label:38} wall {wall:6.2f}s  past timeout+grace "
                f"{wall - args.timeout - args.grace:+6.2f}s  result {size / 1e6:5.2f} MB  "
                f"{'ok' if result.ok else 'not ok'}: {(result.error or '')[:60]}",
                flush=True,
            )
        evaluator.close()
    me = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    waited = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"largest resident set: caller {me:.0f} MB, processes it waited for {waited:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
