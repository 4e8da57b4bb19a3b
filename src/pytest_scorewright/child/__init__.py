"""Everything that executes next to candidate code: the processes below the trusted parent
(S, PID 1, the worker), their confinement, the pytest run, the reporter, the monitor, and
the child's part of a prepared session.

Whatever runs in the candidate's process is the candidate's: code here reports, it never
decides. So it may import only what it needs to report, never the parent's judgement or
plans. The rule, enforced by ``tests/test_layout.py``:

- from this package: ``pytest_scorewright.child.*``;
- the plain data and framing that cross the boundary: ``pytest_scorewright.sandbox.wire``,
  ``pytest_scorewright.sandbox.channel``;
- small leaves with no logic of the parent's: ``pytest_scorewright.results.phases``,
  ``pytest_scorewright._text``, ``pytest_scorewright.limits``, ``pytest_scorewright.errors``;
- and never, even indirectly: the evaluator, the rest of ``sandbox/``, ``warm/``,
  ``integrity/``, ``fanout/``, ``results.assemble``, fitness functions, adapters or the CLI.
"""

#: What child code may import from this project (prefixes; see the docstring).
ALLOWED_IMPORTS = (
    "pytest_scorewright.child",
    "pytest_scorewright.sandbox.wire",
    "pytest_scorewright.sandbox.channel",
    "pytest_scorewright.results.phases",
    "pytest_scorewright._text",
    "pytest_scorewright.limits",
    "pytest_scorewright.errors",
)
