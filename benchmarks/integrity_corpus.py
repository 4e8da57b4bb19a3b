"""Caught-rate and false-positive rate of the integrity layer on tests/corpus.

Run from the project root: ``python -m benchmarks.integrity_corpus``. Uses the evaluator with
defaults, as ``scorewright score CANDIDATE --tests T --heldout H --reference R`` does.
"""

from __future__ import annotations

import sys
import time

from pytest_scorewright.evaluator import Evaluator
from tests.corpus import cases, tasks


def main() -> int:
    rows = []
    for task in tasks():
        evaluator = Evaluator(
            task / "tests", heldout=task / "heldout", reference=task / "reference"
        )
        for case in cases(task):
            started = time.monotonic()
            result = evaluator.score(case.path)
            codes = [r.code for r in result.integrity.reasons]
            ok = not codes if case.honest else bool(set(codes) & case.expect)
            rows.append((case, ok, codes, time.monotonic() - started))
    for case, ok, codes, seconds in rows:
        mark = "ok " if ok else "BAD"
        print(f"{mark} {case.name:38} {seconds:5.2f}s  {', '.join(codes) or '-'}")
    gaming = [r for r in rows if not r[0].honest]
    honest = [r for r in rows if r[0].honest]
    caught = sum(bool(r[2]) for r in gaming)
    caught_named = sum(r[1] for r in gaming)
    false_pos = sum(bool(r[2]) for r in honest)
    print()
    print(f"gaming flagged:            {caught}/{len(gaming)} ({100 * caught / len(gaming):.0f}%)")
    print(
        f"gaming flagged for its trick: {caught_named}/{len(gaming)} "
        f"({100 * caught_named / len(gaming):.0f}%)"
    )
    print(f"honest flagged (false +):  {false_pos}/{len(honest)}")
    return 0 if caught_named == len(gaming) and false_pos == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
