"""Everything that executes in the sandbox, below the trusted parent: the processes S, PID 1
and the worker (``processes.py``, ``confine.py``), the test process's pytest run
(``runner.py``, ``reporter.py``, ``resume.py``), its tripwires and trusted probes
(``monitor.py``, ``recheck.py``, ``anchors.py``, ``bench.py``), its proxies to the
candidate's process (``proxy.py``, started by ``spawner.py``), and, in ``apart/``, the
candidate's own process.

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
SHARED = ("pytest_scorewright.child.monitor", "pytest_scorewright.child.imports")
#: What the candidate's process (``child/apart/``) may import from this project.
APART_ALLOWED_IMPORTS = (
    "pytest_scorewright.child.apart",
    *SHARED,
    *(prefix for prefix in ALLOWED_IMPORTS if prefix != "pytest_scorewright.child"),
)
