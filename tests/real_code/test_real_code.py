"""Real code end to end: a real library's own suite, its pristine package as the reference and
as a candidate, and an honest bug, scored by ``scorewright score``: nothing flagged, and
every test's outcome the same as plain pytest's (benchmarks/real_code.py does all three
libraries)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.real_code import (
    LIBRARIES,
    FetchError,
    Scored,
    build_task,
    compare,
    fetch,
    plain_outcomes,
    score,
)

pytestmark = pytest.mark.sandbox  # forks real sandboxes (and may download from PyPI)


def test_a_real_library_and_an_honest_bug_are_not_flagged_and_agree_with_pytest(
    tmp_path: Path,
) -> None:
    library = next(lib for lib in LIBRARIES if lib.dist == "cachetools")
    try:
        unpacked = fetch(library)
    except FetchError as exc:
        pytest.skip(f"cachetools could not be downloaded from PyPI: {exc}")
    task = build_task(library, unpacked, tasks=tmp_path / "tasks")
    candidates = {c.name: c for c in task.candidates()}
    for name in ("pristine", "mutant_size_limit_off_by_one"):
        one = Scored(name, score(task, candidates[name], tmp_path / f"{name}.json"))
        plain = plain_outcomes(task.tests, candidates[name], tmp_path)
        plain |= plain_outcomes(task.heldout, candidates[name], tmp_path)
        compare(one, plain)
        result = one.result
        assert result.ok, result.error
        assert not result.integrity.flagged, [(r.code, r.detail) for r in result.integrity.reasons]
        assert not result.integrity.rejected
        assert one.disagreements == []
        assert len(result.tests) > 200  # the library's own suite, both parts
        passed = sum(t.passed for t in result.tests)
        if name == "pristine":
            assert passed == len(result.tests)
        else:
            assert 0 < passed < len(result.tests)  # the bug is found, as plain pytest finds it
