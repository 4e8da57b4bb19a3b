"""Everything that executes in the sandbox, below the trusted parent, one folder per process:

- ``setup/``: S, PID 1 and the worker W's confinement, before any candidate code
  (``processes.py``, ``confine.py``; PID 1's ``spawner.py`` starts the processes below);
- ``test_process/``: pytest's run of the trusted tests, the reporter, each test's clock, the
  trusted probes and, with the candidate apart, its proxies and stand-ins;
- ``apart/``: the candidate's own process;
- ``shared/``: what both sandboxed processes load (the monitor, the path rule, coverage).

Whatever runs next to candidate code is the candidate's: code here reports, it never decides.
So it may import only what it needs to report, never the parent's judgement or plans. The
rule, enforced by ``tests/test_layout.py``:

- from this package: ``pytest_scorewright.child.*``;
- the leaves below both sides: ``protocol`` (messages, framing, values) and ``kernel``
  (Linux wrappers), ``_text``, ``limits``, ``errors``;
- never, even indirectly: the evaluator, ``sandbox/``, ``suite/``, ``warm/``, ``scoring/``,
  ``integrity/``, ``results/``, ``fanout/``, fitness functions, adapters or the CLI.

``apart/`` (the candidate's process) is stricter: nothing of the test process's side, only
the leaves and :data:`SHARED`, the modules armed in both sandboxed processes.
"""

#: What child code may import from this project (prefixes; see the docstring).
ALLOWED_IMPORTS = (
    "pytest_scorewright.child",
    "pytest_scorewright.protocol",
    "pytest_scorewright.kernel",
    "pytest_scorewright._text",
    "pytest_scorewright.limits",
    "pytest_scorewright.errors",
)
#: Modules of this package that run in both sandboxed processes (the candidate's too).
SHARED = ("pytest_scorewright.child.shared",)
#: What the candidate's process (``child/apart/``) may import from this project.
APART_ALLOWED_IMPORTS = (
    "pytest_scorewright.child.apart",
    *SHARED,
    *(prefix for prefix in ALLOWED_IMPORTS if prefix != "pytest_scorewright.child"),
)
