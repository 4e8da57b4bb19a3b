"""The layout's own guarantees: what child code may import, and names that checks rely on."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_scorewright import child
from pytest_scorewright.child.shared import monitor
from pytest_scorewright.child.test_process import identities
from pytest_scorewright.integrity import verdict
from pytest_scorewright.protocol import wire

CHILD_DIR = Path(child.__file__).parent
#: Packages (a `from package import module` line is judged by the module).
PACKAGES = {
    "pytest_scorewright",
    *(
        f"pytest_scorewright.{p.name}"
        for p in CHILD_DIR.parent.iterdir()
        if (p / "__init__.py").exists()
    ),
}

#: Modules no code that runs next to the candidate may load, even indirectly.
PARENT_ONLY = (
    "pytest_scorewright.evaluator",
    "pytest_scorewright.sandbox",
    "pytest_scorewright.suite",
    "pytest_scorewright.warm",
    "pytest_scorewright.scoring",
    "pytest_scorewright.integrity",
    "pytest_scorewright.fanout",
    "pytest_scorewright.fitness",
    "pytest_scorewright.judge",
    "pytest_scorewright.leaderboard",
    "pytest_scorewright.report",
    "pytest_scorewright.audit",
    "pytest_scorewright.openevolve",
    "pytest_scorewright.shinka",
    "pytest_scorewright.verifiers",
    "pytest_scorewright.cli",
    "pytest_scorewright.verify",
)

#: The layers, lowest first: a module may import its own layer's and lower layers' modules,
#: never a higher layer's (CONTRIBUTING.md draws the map). The upper half has floors too:
#: pytest's plugin (a branch that never reaches the evaluator), fitness functions and the
#: feedback text, the judge, the fan-out (the caller's side), the Evaluator, the process
#: bodies that build one (reached by name only) and the options the commands share, the
#: faces (reports, audit, verify, the loops' adapters), the CLI. Only the package's own
#: ``__init__`` (which re-exports the public names) is above them all.
LAYERS = (
    (
        "_version",
        "errors",
        "_text",
        "limits",
        "result",
        "schema",
        "hookspecs",
        "html_page",
        "user_cache",
    ),
    ("protocol",),
    ("kernel",),
    ("child",),
    ("suite",),
    ("sandbox",),
    ("results",),
    ("integrity",),
    ("warm",),
    ("scoring",),
    ("plugin", "pluginmode"),
    ("fitness", "feedback"),
    ("judge",),
    ("fanout",),
    ("evaluator",),
    (
        "workers",
        "command_options",
        "task_dirs",
        "reward_store",
        "reward_scoring",
        "reward_admission",
    ),
    (
        "report",
        "leaderboard",
        "audit",
        "verify",
        "openevolve",
        "verifiers",
        "verl",
        "shinka",
        "reward_shapes",
        "reward_core",
        "reward_routes",
        "reward_http",
        "reward_asgi",
        "reward_service",
        "reward_file",
    ),
    ("cli",),
)
#: Import loops allowed: none, lazy or not.
LAZY_LOOPS: set[tuple[str, str]] = set()
PACKAGE = Path(child.__file__).parent.parent


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _layer(module: str) -> int:
    first = module.split(".")[1] if "." in module else ""
    for level, names in enumerate(LAYERS):
        if first in names:
            return level
    return len(LAYERS)


def _our_imports(path: Path, *, top_level_only: bool) -> set[str]:
    """Our modules that ``path`` imports (``from package import module`` names the module)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    found = set()
    for node in nodes:
        if isinstance(node, ast.If):  # `if TYPE_CHECKING:` imports nothing at run time
            continue
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        for name in names:
            if name in MODULES:
                found.add(name)
    return found - {_module_name(path)}


MODULES = {_module_name(p): p for p in PACKAGE.rglob("*.py")}


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_import_runs_up_the_layers(module: str) -> None:
    upward = [
        name
        for name in _our_imports(MODULES[module], top_level_only=False)
        if _layer(name) > _layer(module) and (module, name) not in LAZY_LOOPS
    ]
    assert not upward, f"{module} imports {upward}, a higher layer (see LAYERS)"


def test_no_import_loops() -> None:
    graph = {m: _our_imports(p, top_level_only=False) for m, p in MODULES.items()}
    for module, target in LAZY_LOOPS:
        graph[module].discard(target)
    # Depth-first search for a back edge; a package importing its own submodules (its
    # __init__ re-exporting them) is not a loop unless a submodule imports the package back.
    state: dict[str, int] = {}
    loops: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                loops.append([*path[path.index(nxt) :], nxt] if nxt in path else [node, nxt])
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert not loops, f"import loops: {loops}"


@pytest.mark.slow  # starts a process, or takes seconds of CPU
def test_loading_the_child_side_loads_nothing_of_the_parents() -> None:
    # What a sandboxed run imports of ours (its processes, pytest's run, and our plugin), in
    # a fresh interpreter, so that nothing this test process loaded counts.
    code = (
        "import sys\n"
        "import pytest_scorewright.child.setup.processes, pytest_scorewright.plugin\n"
        "print('\\n'.join(m for m in sys.modules if m.startswith('pytest_scorewright')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = done.stdout.split()
    assert "pytest_scorewright.child.test_process.runner" in loaded
    leaked = [m for m in loaded if m.startswith(PARENT_ONLY)]
    assert not leaked, f"the child side loads parent-only modules: {leaked}"


def test_the_verdict_has_a_handler_for_every_message_kind() -> None:
    missing = set(wire.VOCABULARY) - set(verdict._HANDLERS) - {wire.SANDBOX}
    assert not missing, f"message kinds the verdict cannot handle: {sorted(missing)}"
    unknown = set(verdict._HANDLERS) - set(wire.VOCABULARY)
    assert not unknown, f"handlers for kinds not in the vocabulary: {sorted(unknown)}"


@pytest.mark.parametrize(
    "watched",
    monitor.own_identities() + identities.test_process_identities(),
    ids=lambda w: ".".join(p for p in w if p),
)
def test_every_identity_the_monitor_snapshots_resolves(watched: tuple[str, str, str]) -> None:
    # The monitor names what it watches; a module moved or renamed would silently leave an
    # identity unchecked (the snapshot skips what it cannot find).
    module_name, owner, name = watched
    module = importlib.import_module(module_name)
    holder = getattr(module, owner) if owner else module
    assert name in vars(holder), f"{module_name}.{owner}.{name} does not exist"


#: The longest a function in src/ may grow (CONTRIBUTING): past it, split by step.
MAX_FUNCTION_LINES = 80


def test_no_function_in_src_is_longer_than_the_limit() -> None:
    long = []
    for path in sorted(CHILD_DIR.parent.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(CHILD_DIR.parent)}:{node.name} ({lines})")
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines: {long}"


#: The public face stays small (issue 43): its machinery lives in scoring/ and fanout/.
MAX_EVALUATOR_LINES = 300


def test_the_evaluator_is_a_small_face() -> None:
    lines = (CHILD_DIR.parent / "evaluator.py").read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_EVALUATOR_LINES, f"evaluator.py has {lines} lines"


def test_every_module_has_a_name_of_its_own() -> None:
    # A name says what a module does wherever it is read (a traceback, a grep, a review):
    # two `settings.py` in two folders make every mention of one ambiguous.
    seen: dict[str, list[str]] = {}
    for path in sorted(CHILD_DIR.parent.rglob("*.py")):
        if path.name not in ("__init__.py", "__main__.py"):
            seen.setdefault(path.name, []).append(str(path.relative_to(CHILD_DIR.parent)))
    repeated = {name: paths for name, paths in seen.items() if len(paths) > 1}
    assert not repeated, repeated


def test_no_folder_imports_a_folder_that_imports_it_back() -> None:
    # Modules of one floor may import each other, but two folders (or top-level modules)
    # that reach into each other are one unit in two places: a circle at the folder level.
    def unit(module: str) -> str:
        parts = module.split(".")
        return parts[1] if len(parts) > 1 else ""

    edges = {
        (unit(m), unit(n))
        for m, path in MODULES.items()
        for n in _our_imports(path, top_level_only=False)
        if unit(m) and unit(n) and unit(m) != unit(n)
    }
    both_ways = sorted({tuple(sorted(e)) for e in edges if (e[1], e[0]) in edges})
    assert not both_ways, both_ways


#: The sandbox's processes, one folder each (child/__init__.py), and what each may import
#: of the others: setup starts the test process and the candidate's; both load ``shared/``;
#: the candidate's process loads nothing of the test process's side, nor the test process
#: anything of the candidate's (it reaches it only by name, over the call channel).
PROCESS_FOLDERS = {
    "setup": {"setup", "test_process", "apart", "shared"},
    "test_process": {"test_process", "shared"},
    "apart": {"apart", "shared"},
    "shared": {"shared"},
}


def _child_folder(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 3 and parts[1] == "child" else None


def test_every_child_module_lives_in_the_folder_of_its_process() -> None:
    loose = [
        name
        for name in MODULES
        if name.startswith("pytest_scorewright.child.")
        and _child_folder(name) not in PROCESS_FOLDERS
        and name.split(".")[2] not in PROCESS_FOLDERS
    ]
    assert not loose, f"child modules outside a process's folder: {loose}"


@pytest.mark.parametrize("folder", sorted(PROCESS_FOLDERS))
def test_a_process_imports_only_what_runs_in_it(folder: str) -> None:
    crossing = [
        f"{module} imports {name}"
        for module, path in MODULES.items()
        if _child_folder(module) == folder
        for name in _our_imports(path, top_level_only=False)
        if name.startswith("pytest_scorewright.child.")
        and (_child_folder(name) or name.split(".")[2]) not in PROCESS_FOLDERS[folder]
    ]
    assert not crossing, crossing
    # And nothing of the parent's side: only the leaves (child/__init__.py ALLOWED_IMPORTS).
    outside = [
        f"{module} imports {name}"
        for module, path in MODULES.items()
        if _child_folder(module) == folder
        for name in _our_imports(path, top_level_only=False)
        if not name.startswith(child.ALLOWED_IMPORTS)
        or (folder == "apart" and not name.startswith(child.APART_ALLOWED_IMPORTS))
    ]
    assert not outside, outside


#: The test folders: one per layer (or group of layers) of the package, lowest first, and
#: ``real_code`` for real third-party code end to end. A test module lives in the folder of
#: the lowest layer it is about; only this module stays at the top.
TEST_FOLDERS = {
    "protocol": ("protocol",),
    "child": ("child",),
    "sandbox": ("kernel", "sandbox"),
    "results": ("results", "result"),
    "integrity": ("integrity",),
    "scoring": ("scoring", "warm"),
    "plugin": ("plugin", "pluginmode"),
    "fitness": ("fitness", "feedback"),
    "judge": ("judge",),
    "fanout": ("fanout", "workers"),
    "faces": ("report", "leaderboard", "audit", "openevolve", "verifiers", "verl", "shinka",
              "reward_shapes", "reward_service", "reward_file", "reward_store",
              "reward_scoring", "reward_admission", "reward_core", "reward_routes",
              "reward_http", "reward_asgi"),
    "verify": ("verify",),
    "cli": ("cli", "command_options", "task_dirs"),
    "real_code": (),
}  # fmt: skip
TESTS_DIR = Path(__file__).resolve().parent


def test_test_modules_live_in_the_folders_of_the_layers() -> None:
    layer_names = {name for names in LAYERS for name in names}
    for folder, units in TEST_FOLDERS.items():
        assert set(units) <= layer_names, (folder, set(units) - layer_names)
    top = [p.name for p in TESTS_DIR.glob("test_*.py") if p.name != Path(__file__).name]
    # Folders with an __init__.py are the tests' packages; the others are data (corpora).
    misplaced = top + [
        str(path.relative_to(TESTS_DIR))
        for path in TESTS_DIR.glob("*/test_*.py")
        if (path.parent / "__init__.py").exists() and path.parent.name not in TEST_FOLDERS
    ]
    assert not misplaced, f"test modules outside the layers' folders: {misplaced}"
    for folder in TEST_FOLDERS:
        assert (TESTS_DIR / folder / "__init__.py").is_file(), folder
