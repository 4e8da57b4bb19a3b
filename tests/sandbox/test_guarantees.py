"""The sandbox's named guarantees: asking for one that does not exist is a usage error.

Whether each guarantee holds is shown by real attacks in every mode (test_sandbox_attacks.py,
test_sandbox_degraded.py, run as root and, through test_sandbox_modes.py, as an ordinary
user, without namespaces and in a container); these tests need no fork.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_scorewright.cli import main
from pytest_scorewright.errors import ConfigError
from pytest_scorewright.evaluator import Evaluator
from pytest_scorewright.sandbox.guarantees import GUARANTEES


def test_an_unknown_guarantee_is_refused_before_any_run(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no guarantee named 'netwrok'; use some of") as err:
        Evaluator(tmp_path, require_isolation=["netwrok"])
    assert "\n" not in str(err.value)
    assert all(name in str(err.value) for name in GUARANTEES)


@pytest.mark.slow  # starts a process, or takes seconds of CPU
def test_the_command_line_names_an_unknown_guarantee_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "c.py").write_text("x = 1\n")
    code = main(
        ["score", str(tmp_path / "c.py"), "--tests", str(tmp_path), "--require-isolation=bogus"]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("scorewright: error: require_isolation: no guarantee named 'bogus'")
    assert err.count("\n") == 1
