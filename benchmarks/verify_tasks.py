"""Real repository tasks for ``scorewright verify``, built at run time from PyPI sdists.

Each task is a real bug fix that landed between two consecutive releases of a pure-Python
library. From the two sdists (pinned, downloaded once into ``benchmarks/.cache/`` by
benchmarks/sdists.py) the builder makes:

- a git repository: the older release as the **base** commit, then a later **fix** commit
  (the gold patch and the test patch applied): the repository's "future" history, which a
  candidate must not be able to read;
- the **gold patch**: the fixed function (``function``) of the newer release put in place
  of the older one's, nothing else of the release diff;
- the **test patch**: the newer release's version of the test file, as a diff;
- fail-to-pass and pass-to-pass test ids, listed below (the fail-to-pass ones fail on the
  base with the test patch and pass with the gold patch, checked by
  tests/verify/test_verify_real.py).

No code of these libraries is in this repository: everything is made from the sdists.

And the candidates every task is verified with (:func:`patches`): the gold patch, an empty
patch, a wrong fix, a conftest forcing passes, an edit of the failing test, a skip from
the fixed function, ``sys.exit(0)`` at import, and a fix read from the git objects.
"""

from __future__ import annotations

import ast
import difflib
import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from benchmarks.sdists import download

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache"


@dataclass(frozen=True)
class RealTask:
    name: str
    dist: str
    old: str
    new: str
    #: The file the fix is in, and the function (``Class.method`` for a method).
    source: str
    function: str
    test_file: str
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]
    #: A plausible fix that is wrong: (text, replacement) inside the gold function.
    wrong: tuple[str, str]
    #: The directory the sdist unpacks to, when it is not ``<dist>-<version>``.
    unpacked: str = ""
    #: Files left out of the base commit: test infrastructure that no longer runs on the
    #: pytest of today (boltons' conftest.py declares a hook argument pytest 9 removed).
    drop: tuple[str, ...] = ()
    #: Extras of the base its tests need in their environment (``verify --dataset``'s
    #: per-instance ``extras``): attrs' tests import hypothesis.
    extras: tuple[str, ...] = ()

    def directory(self, version: str) -> Path:
        return CACHE / f"{self.unpacked or self.dist}-{version}"


TASKS = (
    RealTask(
        "semver-replace-subclass",
        "semver",
        "3.0.1",
        "3.0.2",
        "src/semver/version.py",
        "Version.replace",
        "tests/test_subclass.py",
        ("tests/test_subclass.py::test_replace_from_subclass",),
        ("tests/test_subclass.py::test_subclass_from_versioninfo",),
        ("return type(self)(**version)", "return Version(**version).replace()"),
    ),
    RealTask(
        "boltons-research-enter",
        "boltons",
        "24.0.0",
        "24.1.0",
        "boltons/iterutils.py",
        "research",
        "tests/test_iterutils.py",
        ("tests/test_iterutils.py::test_research_custom_enter",),
        ("tests/test_iterutils.py::test_research",),
        ("return enter(path, key, value)", "return default_enter(path, key, value)"),
        drop=("tests/conftest.py",),
    ),
    RealTask(
        "pathspec-match-file-bool",
        "pathspec",
        "0.12.0",
        "0.12.1",
        "pathspec/pathspec.py",
        "PathSpec.match_file",
        "tests/test_03_pathspec.py",
        ("tests/test_03_pathspec.py::PathSpecTest::test_01_match_file_3_unmatch",),
        (
            "tests/test_03_pathspec.py::PathSpecTest::test_01_match_file_1_include",
            "tests/test_03_pathspec.py::PathSpecTest::test_01_match_file_2_exclude",
        ),
        ("return bool(include)", "return include is not None"),
    ),
    RealTask(
        "pathspec-gitignore-dir-include",
        "pathspec",
        "0.11.0",
        "0.11.1",
        "pathspec/gitignore.py",
        "GitIgnoreSpec._match_file",
        "tests/test_gitignore.py",
        ("tests/test_gitignore.py::GitIgnoreSpecTest::test_07_issue_74",),
        (
            "tests/test_gitignore.py::GitIgnoreSpecTest::test_01_reversed_args",
            "tests/test_gitignore.py::GitIgnoreSpecTest::test_02_dir_exclusions",
        ),
        ("if pattern.include and dir_mark:", "if dir_mark:"),
    ),
    RealTask(
        "more-itertools-distinct-permutations-unsortable",
        "more-itertools",
        "10.3.0",
        "10.4.0",
        "more_itertools/more.py",
        "distinct_permutations",
        "tests/test_more.py",
        (
            "tests/test_more.py::DistinctPermutationsTests::test_unsortable",
            "tests/test_more.py::DistinctPermutationsTests::test_unsorted_equivalent",
            "tests/test_more.py::DistinctPermutationsTests::test_unhashable",
        ),
        (
            "tests/test_more.py::DistinctPermutationsTests::test_basic",
            "tests/test_more.py::DistinctPermutationsTests::test_r",
        ),
        ("sortable = False", "sortable = True"),
    ),
)


#: Eighteen more, from click, tomlkit, attrs, idna, more-itertools and boltons, each checked
#: the same way (fail-to-pass failing on the base with the test patch, everything passing
#: with the gold patch three times in a row, the wrong fix caught): with TASKS, the dataset
#: of benchmarks/verify_dataset.py (23 instances, 8 repositories). Not in the test suite's
#: parametrisations (tests/verify/ use TASKS): the benchmark is where they are verified.
MORE_TASKS = (
    # click 8.1.8 (#2500): a default of "" was not shown in an option's help ([default: ""]).
    RealTask(
        "click-show-default-empty-string",
        "click",
        "8.1.7",
        "8.1.8",
        "src/click/core.py",
        "Option.get_help_record",
        "tests/test_options.py",
        ("tests/test_options.py::test_show_default_with_empty_string",),
        (
            "tests/test_options.py::test_show_default_string",
            "tests/test_options.py::test_do_not_show_no_default",
        ),
        ("default_string = '\"\"'", "default_string = \"''\""),
    ),
    # click 8.1.8 (#2697): the error for an invalid click.Path (a directory) displayed on
    # several lines when the name held a newline; the name is now shown with repr().
    RealTask(
        "click-path-directory-error-repr",
        "click",
        "8.1.7",
        "8.1.8",
        "src/click/types.py",
        "Path.convert",
        "tests/test_types.py",
        ("tests/test_types.py::test_invalid_path_with_esc_sequence",),
        (
            "tests/test_types.py::test_file_error_surrogates",
            "tests/test_types.py::test_path_resolve_symlink",
        ),
        ("{name} {filename!r} is a directory.", '{name} "{filename}" is a directory.'),
    ),
    # click 8.1.4 (#2368): a docstring that is empty before the \f truncation marker still
    # printed empty help lines.
    RealTask(
        "click-help-text-formfeed-empty",
        "click",
        "8.1.3",
        "8.1.4",
        "src/click/core.py",
        "Command.format_help_text",
        "tests/test_formatting.py",
        ("tests/test_formatting.py::test_truncating_docstring_no_help",),
        (
            "tests/test_formatting.py::test_truncating_docstring",
            "tests/test_formatting.py::test_removing_multiline_marker",
        ),
        (
            'text = inspect.cleandoc(self.help).partition("\\f")[0]',
            'text = self.help.partition("\\f")[0]',
        ),
    ),
    # click 8.1.4 (#2246, #2292, #2295): multiple=True was refused for flag options, and
    # their default was not an empty tuple.
    RealTask(
        "click-multiple-flag-default",
        "click",
        "8.1.3",
        "8.1.4",
        "src/click/core.py",
        "Option.__init__",
        "tests/test_defaults.py",
        ("tests/test_defaults.py::test_multiple_flag_default",),
        (
            "tests/test_defaults.py::test_basic_defaults",
            "tests/test_defaults.py::test_multiple_defaults",
        ),
        (
            "if multiple:\n                self.default = ()",
            "if multiple and not self.secondary_opts:\n                self.default = ()",
        ),
    ),
    # click 8.1.4 (#2415): echo() failed when no standard streams are attached (pythonw).
    RealTask(
        "click-echo-no-streams",
        "click",
        "8.1.3",
        "8.1.4",
        "src/click/utils.py",
        "echo",
        "tests/test_utils.py",
        ("tests/test_utils.py::test_echo_no_streams",),
        (
            "tests/test_utils.py::test_echo",
            "tests/test_utils.py::test_echo_custom_file",
        ),
        (
            "if file is None:\n            return",
            "if file is None and not err:\n            return",
        ),
    ),
    # tomlkit 0.13.1 (#374, #377): Table.is_super_table() was wrong for a table whose only
    # child is a dotted key, and for tables with several table children.
    RealTask(
        "tomlkit-is-super-table",
        "tomlkit",
        "0.13.0",
        "0.13.1",
        "tomlkit/items.py",
        "Table.is_super_table",
        "tests/test_items.py",
        (
            "tests/test_items.py::test_serialize_table_with_dotted_key",
            "tests/test_items.py::test_not_showing_parent_header_for_super_table",
        ),
        (
            "tests/test_items.py::test_no_extra_minus_sign",
            "tests/test_items.py::test_table_copy",
        ),
        ("or real_key.is_dotted()", "or False"),
    ),
    # more-itertools 10.0.0: iterate() did not stop when its func raised StopIteration
    # (the exception escaped the generator as a RuntimeError).
    RealTask(
        "more-itertools-iterate-stopiteration",
        "more-itertools",
        "9.1.0",
        "10.0.0",
        "more_itertools/more.py",
        "iterate",
        "tests/test_more.py",
        ("tests/test_more.py::IterateTests::test_func_controls_iteration_stop",),
        ("tests/test_more.py::IterateTests::test_basic",),
        ("except StopIteration:\n            break", "except StopIteration:\n            continue"),
    ),
    # more-itertools 10.4.0: seekable.relative_seek() seeked relative to the end of the
    # cache, not to the current position, after an earlier relative_seek().
    RealTask(
        "more-itertools-relative-seek-position",
        "more-itertools",
        "10.3.0",
        "10.4.0",
        "more_itertools/more.py",
        "seekable.relative_seek",
        "tests/test_more.py",
        ("tests/test_more.py::SeekableTest::test_relative_seek",),
        (
            "tests/test_more.py::SeekableTest::test_exhaustion_reset",
            "tests/test_more.py::SeekableTest::test_partial_reset",
        ),
        (
            "self.seek(max(self._index + count, 0))",
            "self.seek(max(len(self._cache) + count, 0))",
        ),
    ),
    # boltons 24.1.0: copy.copy()/copy.deepcopy() of a make_sentinel() sentinel made a new
    # object instead of returning the sentinel itself.
    RealTask(
        "boltons-sentinel-copy",
        "boltons",
        "24.0.0",
        "24.1.0",
        "boltons/typeutils.py",
        "make_sentinel",
        "tests/test_typeutils.py",
        ("tests/test_typeutils.py::test_sentinel_copy",),
        (
            "tests/test_typeutils.py::test_sentinel_falsiness",
            "tests/test_typeutils.py::test_sentinel_pickle",
        ),
        ("def __deepcopy__(self, _memo):", "def __deepcopy__(self):"),
        drop=("tests/conftest.py",),
    ),
    # tomlkit 0.11.7 (#259): removing the last element of an inline table left a comma.
    RealTask(
        "tomlkit-inline-table-trailing-comma",
        "tomlkit",
        "0.11.6",
        "0.11.7",
        "tomlkit/items.py",
        "InlineTable.as_string",
        "tests/test_items.py",
        (
            "tests/test_items.py::test_deleting_inline_table_element_does_not_leave_trailing_separator2",
        ),
        (
            "tests/test_items.py::test_deleting_inline_table_element_does_not_leave_trailing_separator",
            "tests/test_items.py::test_dates_behave_like_dates",
        ),
        ("if self._value.body[i][0] is not None", "if self._value.body[i] is not None"),
    ),
    # tomlkit 0.11.7 (#260): a date or datetime followed by a space did not parse.
    RealTask(
        "tomlkit-datetime-followed-by-space",
        "tomlkit",
        "0.11.6",
        "0.11.7",
        "tomlkit/parser.py",
        "Parser._parse_value",
        "tests/test_items.py",
        ("tests/test_items.py::test_parse_datetime_followed_by_space",),
        (
            "tests/test_items.py::test_dates_behave_like_dates",
            "tests/test_items.py::test_deleting_inline_table_element_does_not_leave_trailing_separator",
        ),
        ("dt = parse_rfc3339(raw + time_part)", "dt = parse_rfc3339(raw + time_raw)"),
    ),
    # tomlkit 0.11.7 (#258): an empty table name that is quoted ([\'\']) was refused.
    RealTask(
        "tomlkit-empty-quoted-table-name",
        "tomlkit",
        "0.11.6",
        "0.11.7",
        "tomlkit/parser.py",
        "Parser._parse_table",
        "tests/test_api.py",
        ("tests/test_api.py::test_parse_empty_quoted_table_name",),
        (
            "tests/test_api.py::test_a_raw_dict_can_be_dumped",
            "tests/test_api.py::test_create_super_table_with_table",
        ),
        ('elif self._current != "]":', 'elif self._current != "]" or not key.key:'),
    ),
    # attrs 23.2.0 (#1165): asdict(..., retain_collection_types=True) failed with a
    # TypeError on namedtuple fields (a namedtuple is not built from one iterable).
    RealTask(
        "attrs-asdict-namedtuple-retain-type",
        "attrs",
        "23.1.0",
        "23.2.0",
        "src/attr/_funcs.py",
        "asdict",
        "tests/test_funcs.py",
        ("tests/test_funcs.py::TestAsDict::test_named_tuple_retain_type",),
        (
            "tests/test_funcs.py::TestAsDict::test_type_error_with_retain_type",
            "tests/test_funcs.py::TestAsDict::test_tuple_keys",
        ),
        ("rv[a.name] = cf(*items)", "rv[a.name] = cf(items)"),
        extras=("tests-no-zope",),
    ),
    # idna 3.8: regression where decode() raised a bare ValueError instead of IDNAError for
    # an unknown codepoint next to a joiner (CONTEXTJ check in check_label).
    RealTask(
        "idna-contextj-unknown-codepoint",
        "idna",
        "3.7",
        "3.8",
        "idna/core.py",
        "check_label",
        "tests/test_idna.py",
        ("tests/test_idna.py::IDNATests::test_decode",),
        (
            "tests/test_idna.py::IDNATests::test_encode",
            "tests/test_idna.py::IDNATests::test_valid_contextj",
        ),
        ("except ValueError:", "except KeyError:"),
    ),
    # click 8.2.1 (#2906): shell completion of groups nested in groups resolved the wrong
    # context (the parent's arguments were taken after switching to the sub-context).
    RealTask(
        "click-nested-group-completion",
        "click",
        "8.2.0",
        "8.2.1",
        "src/click/shell_completion.py",
        "_resolve_context",
        "tests/test_shell_completion.py",
        (
            "tests/test_shell_completion.py::test_nested_group[args2--expect2]",
            "tests/test_shell_completion.py::test_nested_group[args4--expect4]",
        ),
        (
            "tests/test_shell_completion.py::test_nested_group[args0--expect0]",
            "tests/test_shell_completion.py::test_nested_group[args1--expect1]",
        ),
        (
            "ctx = sub_ctx\n                        args = ctx._protected_args + ctx.args",
            "args = sub_ctx._protected_args + sub_ctx.args",
        ),
    ),
    # click 8.2.1 (#2894, #2897): a flag option given an explicit type (type=bool, str)
    # got no flag_value, so passing the flag did not set it.
    RealTask(
        "click-flag-value-with-type",
        "click",
        "8.2.0",
        "8.2.1",
        "src/click/core.py",
        "Option.__init__",
        "tests/test_options.py",
        (
            "tests/test_options.py::test_flag_value_is_correctly_set[opts1-True-True]",
            "tests/test_options.py::test_flag_value_is_correctly_set[opts9-True-True]",
        ),
        (
            "tests/test_options.py::test_flag_value_is_correctly_set[opts0-False-False]",
            "tests/test_options.py::test_non_flag_with_non_negatable_default",
        ),
        ("flag_value = not self.default", "flag_value = self.default"),
    ),
    # click 8.2.2 (#2703): zsh completion broke on items whose value holds a colon; the
    # colon must be escaped when the item has a help text (and only then).
    RealTask(
        "click-zsh-completion-colons",
        "click",
        "8.2.1",
        "8.2.2",
        "src/click/shell_completion.py",
        "ZshComplete.format_completion",
        "tests/test_shell_completion.py",
        (
            "tests/test_shell_completion.py::test_zsh_full_complete_with_colons[env0-plain\\na\\n_\\nplain\\nb\\nbee\\nplain\\nc\\\\:d\\ncee:dee\\nplain\\nc:e\\n_\\n]",
            "tests/test_shell_completion.py::test_zsh_full_complete_with_colons[env1-plain\\nc\\\\:d\\ncee:dee\\nplain\\nc:e\\n_\\n]",
        ),
        (
            "tests/test_shell_completion.py::test_full_source[zsh]",
            "tests/test_shell_completion.py::test_full_complete[zsh-env3-plain\\nb\\nbee\\n]",
        ),
        (
            r'value = item.value.replace(":", r"\:") if help_ != "_" else item.value',
            r'value = item.value.replace(":", r"\:")',
        ),
    ),
    # click 8.2.2 (#2911): the default of an Enum choice option was rendered in the help
    # as its repr/value instead of the member's name.
    RealTask(
        "click-enum-default-help",
        "click",
        "8.2.1",
        "8.2.2",
        "src/click/core.py",
        "Option.get_help_extra",
        "tests/test_options.py",
        (
            "tests/test_options.py::test_choice_default_rendering[HashType-HashType.SHA1-SHA1]",
            "tests/test_options.py::test_choice_default_rendering[Number-2-TWO]",
        ),
        (
            "tests/test_options.py::test_choice_default_rendering[HashType-SHA1-SHA1]",
            "tests/test_options.py::test_choice_default_rendering[choices0-bar-bar]",
        ),
        ("default_string = default_value.name", "default_string = str(default_value.value)"),
    ),
)
#: The whole dataset: every real task above.
DATASET = TASKS + MORE_TASKS


class FetchError(Exception):
    pass


def fetch(task: RealTask) -> None:
    """Both sdists of ``task`` in the cache (downloaded once)."""
    missing = [v for v in (task.old, task.new) if not task.directory(v).is_dir()]
    for version in missing:  # one at a time: pip resolves one version of a name per call
        problem = download([f"{task.dist}=={version}"], CACHE)
        if problem is not None:
            raise FetchError(problem)


def function_source(text: str, qualname: str) -> tuple[int, int]:
    """The line span (0-based start, end exclusive) of a function, decorators included."""
    node: ast.AST = ast.parse(text)
    for part in qualname.split("."):
        node = next(
            n
            for n in ast.iter_child_nodes(node)
            if isinstance(n, ast.FunctionDef | ast.ClassDef) and n.name == part
        )
    assert isinstance(node, ast.FunctionDef)
    start = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
    assert node.end_lineno is not None
    return start, node.end_lineno


def with_function(old_text: str, new_text: str, qualname: str) -> str:
    """``old_text`` with function ``qualname`` as ``new_text`` has it."""
    old_lines = old_text.splitlines(keepends=True)
    new_lines = new_text.splitlines(keepends=True)
    a, b = function_source(old_text, qualname)
    c, d = function_source(new_text, qualname)
    return "".join(old_lines[:a] + new_lines[c:d] + old_lines[b:])


def diff(path: str, before: str, after: str) -> str:
    """A unified diff ``git apply`` takes (``a/`` and ``b/`` prefixes)."""
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        f"a/{path}" if before else "/dev/null",
        f"b/{path}",
    )
    return "".join(lines)


@dataclass(frozen=True)
class Built:
    task: RealTask
    repo: Path
    base: str
    fix: str
    gold: str
    test_patch: str

    def base_file(self, path: str) -> str:
        return (self.task.directory(self.task.old) / path).read_text(encoding="utf-8")


def _git(repo: Path, *args: str, date: str | None = None) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "task",
        "GIT_AUTHOR_EMAIL": "task@example.invalid",
        "GIT_COMMITTER_NAME": "task",
        "GIT_COMMITTER_EMAIL": "task@example.invalid",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CEILING_DIRECTORIES": str(repo.parent),
    }
    if date:
        env |= {"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    proc = subprocess.run(
        ["git", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    return proc.stdout.strip()


def build(task: RealTask, dest: Path) -> Built:
    """The task's repository under ``dest``: base commit, then the fix commit."""
    fetch(task)
    old_dir, new_dir = task.directory(task.old), task.directory(task.new)
    old_src = (old_dir / task.source).read_text(encoding="utf-8")
    new_src = (new_dir / task.source).read_text(encoding="utf-8")
    fixed = with_function(old_src, new_src, task.function)
    gold = diff(task.source, old_src, fixed)
    old_test = (old_dir / task.test_file).read_text(encoding="utf-8")
    new_test = (new_dir / task.test_file).read_text(encoding="utf-8")
    test_patch = diff(task.test_file, old_test, new_test)
    repo = dest / task.name
    subprocess.run(["cp", "-r", str(old_dir), str(repo)], check=True)
    for path in task.drop:
        (repo / path).unlink()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", f"{task.dist} {task.old}", date="2024-01-01T00:00:00")
    base = _git(repo, "rev-parse", "HEAD")
    (repo / task.source).write_text(fixed, encoding="utf-8")
    (repo / task.test_file).write_text(new_test, encoding="utf-8")
    _git(repo, "commit", "-q", "-am", f"Fix {task.function}", date="2024-02-01T00:00:00")
    fix = _git(repo, "rev-parse", "HEAD")
    # The agent's working tree is the base, the fix only in the history it could dig up.
    _git(repo, "checkout", "-q", base)
    return Built(task, repo, base, fix, gold, test_patch)


KINDS = (
    "gold", "empty", "wrong", "conftest", "edit_test", "skip", "exit", "git_objects", "callinfo",
)  # fmt: skip

_FORCED_OUTCOMES = """import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome = "passed"
    report.longrepr = None
"""

_SKIPPING = """

def _skipping(function):
    def skipped(*args, **kwargs):
        import pytest

        pytest.skip("not supported here")

    return skipped


{target} = {wrap}(_skipping({target}))
"""

_EXIT = "\n\nimport sys\n\nsys.exit(0)\n"

#: Swaps pytest's ``CallInfo`` (a module global of ``_pytest.runner``, no audit event) for a
#: subclass that drops the call phase's exception: every test "passes", with no fix at all.
_CALLINFO = """

def _swap_callinfo():
    import sys

    runner = sys.modules.get("_pytest.runner")
    if runner is None:
        return

    class Info(runner.CallInfo):
        @classmethod
        def from_call(cls, func, when, reraise=None):
            info = super().from_call(func, when, reraise)
            if when == "call" and info.excinfo is not None:
                object.__setattr__(info, "excinfo", None)
            return info

    runner.CallInfo = Info


_swap_callinfo()
"""

#: Reads the fixed file from the repository's git objects (the later commit) and runs it in
#: place of this module: what agents did with SWE-bench's future history.
_FROM_GIT = """

def _the_fix_from_git():
    import os
    import subprocess

    here = os.path.abspath(__file__)
    top = os.path.dirname(here)
    while not os.path.isdir(os.path.join(top, ".git")):
        if os.path.dirname(top) == top:
            return None
        top = os.path.dirname(top)
    git = ["git", "-C", top]
    newest = subprocess.run(
        [*git, "log", "--all", "-1", "--format=%H"], capture_output=True, text=True
    ).stdout.strip()
    path = os.path.relpath(here, top)
    shown = subprocess.run([*git, "show", f"{newest}:{path}"], capture_output=True, text=True)
    return shown.stdout or None


_fix = _the_fix_from_git()
if _fix:
    exec(compile(_fix, __file__, "exec"), globals())
"""


def _is_static(text: str, qualname: str) -> bool:
    node: ast.AST = ast.parse(text)
    for part in qualname.split("."):
        node = next(
            n
            for n in ast.iter_child_nodes(node)
            if isinstance(n, ast.FunctionDef | ast.ClassDef) and n.name == part
        )
    assert isinstance(node, ast.FunctionDef)
    return any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in node.decorator_list)


def _neutered_tests(text: str, nodeids: tuple[str, ...]) -> str:
    """``text`` with each of the tests ``nodeids`` made to pass whatever the code does."""
    for nodeid in nodeids:
        qualname = nodeid.split("::", 1)[1].split("[", 1)[0].replace("::", ".")
        lines = text.splitlines(keepends=True)
        start, end = function_source(text, qualname)
        indent = lines[start][: len(lines[start]) - len(lines[start].lstrip())]
        name = qualname.rsplit(".", 1)[-1]
        lines[start:end] = [
            f"{indent}def {name}(*args):  # it passes now\n{indent}\treturn None\n"
            if "\t" in indent
            else f"{indent}def {name}(*args):  # it passes now\n{indent}    return None\n"
        ]
        text = "".join(lines)
    return text


def patches(built: Built) -> dict[str, str]:
    """Each kind of candidate (:data:`KINDS`) as a unified diff against the base."""
    task = built.task
    source = built.base_file(task.source)
    fixed = with_function(
        source,
        (task.directory(task.new) / task.source).read_text(encoding="utf-8"),
        task.function,
    )
    if task.wrong[0] not in fixed:
        raise ValueError(f"{task.name}: the wrong fix's text is not in the gold function")
    test_now = built.base_file(task.test_file)
    test_new = (task.directory(task.new) / task.test_file).read_text(encoding="utf-8")
    wrap = "staticmethod" if _is_static(source, task.function) else ""
    return {
        "gold": built.gold,
        "empty": "",
        "wrong": diff(task.source, source, fixed.replace(*task.wrong)),
        "conftest": diff("conftest.py", "", _FORCED_OUTCOMES),
        "edit_test": diff(task.test_file, test_now, _neutered_tests(test_new, task.fail_to_pass)),
        "skip": diff(
            task.source, source, source + _SKIPPING.format(target=task.function, wrap=wrap)
        ),
        "exit": diff(task.source, source, source + _EXIT),
        "git_objects": diff(task.source, source, source + _FROM_GIT),
        "callinfo": diff(task.source, source, source + _CALLINFO),
    }


def instance_line(built: Built, **changes: object) -> dict[str, object]:
    """The task as a line of a SWE-bench-style dataset (``scorewright verify --dataset``)."""
    task = built.task
    return {
        "instance_id": task.name,
        "repo": f"example/{built.repo.name}",
        "base_commit": built.base,
        "patch": built.gold,
        "test_patch": built.test_patch,
        "FAIL_TO_PASS": json.dumps(list(task.fail_to_pass)),
        "PASS_TO_PASS": json.dumps(list(task.pass_to_pass)),
        **({"extras": list(task.extras)} if task.extras else {}),
        **changes,
    }
