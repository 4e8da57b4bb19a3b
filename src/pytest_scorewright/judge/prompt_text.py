"""The program as the judge sees it: parsed and written back with every comment, docstring
and string literal replaced by a placeholder, every identifier that is not Python's own word
replaced by a neutral name (judge/names.py), and every file named ``module_N.py``: no
sentence or name the candidate chose reaches the judge; what is left is the code's shape
(docs/judge.md)."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

from pytest_scorewright._text import clean
from pytest_scorewright.judge.names import Neutral, Renamer


class RenderError(Exception):
    """The program cannot be shown to the judge (it does not parse, it is too long)."""


class _Neutralise(ast.NodeTransformer):
    """String and bytes constants and f-strings become numbered placeholders; equal values
    get the same number, so the code's shape (which strings are the same) survives."""

    def __init__(self) -> None:
        self.numbers: dict[object, int] = {}

    def _placeholder(self, kind: str, value: object) -> ast.Constant:
        number = self.numbers.setdefault((kind, value), len(self.numbers) + 1)
        text = f"<{kind} {number}>"
        return ast.Constant(text.encode() if kind == "bytes" else text)

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        if isinstance(node.value, str):
            return ast.copy_location(self._placeholder("str", node.value), node)
        if isinstance(node.value, bytes):
            return ast.copy_location(self._placeholder("bytes", node.value), node)
        return node

    def visit_JoinedStr(self, node: ast.JoinedStr) -> ast.AST:
        # Its literal parts are text the candidate wrote; its expressions are code, but the
        # whole goes: an f-string is one value to a reader of the code's shape.
        return ast.copy_location(self._placeholder("f-string", ast.dump(node)), node)


def neutralised(source: str, renamer: Renamer | None = None) -> str:
    """``source`` parsed and unparsed (comments gone) with literals and chosen names
    replaced (``renamer`` shared by a program's files, so a name reads the same in each)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError) as exc:
        raise RenderError(f"the program does not parse ({type(exc).__name__})") from None
    try:
        tree = _Neutralise().visit(tree)
        tree = Neutral(renamer if renamer is not None else Renamer(())).visit(tree)
        return clean(ast.unparse(tree))
    except RecursionError:
        raise RenderError("the program is nested too deeply to render") from None


def program_files(candidate: Path) -> list[tuple[str, str]]:
    """``(name, source)`` of the candidate's Python files: the file itself, or every ``.py``
    under a directory (sorted; symbolic links are not followed)."""
    if candidate.is_file():
        return [(candidate.name, _read(candidate))]
    files = sorted(p for p in candidate.rglob("*.py") if p.is_file() and not _linked(p, candidate))
    return [(str(p.relative_to(candidate)), _read(p)) for p in files]


def _linked(path: Path, root: Path) -> bool:
    """Whether ``path`` or a folder between ``root`` and it is a symbolic link (the link
    could point at anything: the parent's own files included)."""
    here = root
    for part in path.relative_to(root).parts:
        here = here / part
        if here.is_symlink():
            return True
    return False


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise RenderError(f"cannot read the program ({exc.strerror})") from None


def _module_names(names: Iterable[str]) -> set[str]:
    """The module names the candidate's files give (``pkg/util.py``: ``pkg``, ``util``)."""
    found: set[str] = set()
    for name in names:
        parts = name.replace("\\", "/").split("/")
        parts[-1] = parts[-1].removesuffix(".py")
        found |= {p for p in parts if p.isidentifier() and p != "__init__"}
    return found


def _file_name(name: str, renamer: Renamer) -> str:
    """``pkg/util.py`` as the judge reads it: ``module_1/module_2.py``."""
    parts = name.replace("\\", "/").split("/")
    stem = parts[-1].removesuffix(".py")
    shown = [renamer.neutral(p, "module") if p.isidentifier() else "dir" for p in parts[:-1]]
    last = stem if stem == "__init__" else renamer.neutral(stem, "module")
    return "/".join([*shown, f"{last}.py"])


def render(files: Iterable[tuple[str, str]], limit: int) -> str:
    """Every file neutralised, under a header line of ours; RenderError when there is
    nothing to judge or the whole is over ``limit`` characters."""
    files = list(files)
    renamer = Renamer(_module_names(name for name, _ in files))
    parts = []
    for name, source in files:
        parts.append(f"# file: {_file_name(name, renamer)}\n{neutralised(source, renamer)}")
    if not parts:
        raise RenderError("the candidate has no Python file to judge")
    text = "\n\n".join(parts)
    if len(text) > limit:
        raise RenderError(
            f"the program is {len(text)} characters after neutralising, over max_program_chars "
            f"{limit}"
        )
    return text


def as_written(files: Iterable[tuple[str, str]], limit: int) -> str:
    """Every file as the candidate wrote it (names, comments, strings: only control and
    invisible characters cleaned), for the canary's measure of how far the program's own
    words would move the judge; never the judgement that is credited. RenderError as
    :func:`render`."""
    parts = [f"# file: {clean(name)}\n{clean(source)}" for name, source in files]
    if not parts:
        raise RenderError("the candidate has no Python file to judge")
    text = "\n\n".join(parts)
    if len(text) > limit:
        raise RenderError(f"the program is {len(text)} characters, over max_program_chars {limit}")
    return text
