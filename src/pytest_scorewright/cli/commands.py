"""What each ``scorewright`` command does, once its arguments are parsed."""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from pytest_scorewright._text import clean
from pytest_scorewright.command_options import evaluator_from_args, fitness_from_args
from pytest_scorewright.errors import (
    ConfigError,
    InfrastructureError,
    OutputPathError,
    ResultFormatError,
    ScorewrightError,
)
from pytest_scorewright.fitness import with_fitness
from pytest_scorewright.result import ScoreResult, check_writable, write_atomic
from pytest_scorewright.results.summary import failure_lines, fitness_of, summary_lines
from pytest_scorewright.sandbox.placement import available_cores
from pytest_scorewright.schema import schema_text

#: Seconds between progress lines where stderr is not a terminal (a log file, CI).
PROGRESS_EVERY_S = 5.0
#: The end-of-batch table: its most lines, and the width of its candidate column.
TABLE_ROWS = 30
TABLE_NAME = 32


def cmd_schema(args: argparse.Namespace) -> int:
    sys.stdout.write(schema_text())
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    for label, result in (found for path in args.results for found in _results_in(path)):
        print(f"{label}:")
        for line in summary_lines(result, out=None):
            print(f"  {line}")
        if args.failures:
            for line in failure_lines(result):
                print(f"  {line}")
    return 0


def _results_in(path: str) -> list[tuple[str, ScoreResult]]:
    """The results in ``path``: one result's JSON (``score --out``, ``score-many --out-dir``)
    or JSON Lines, one a line (``score-many --jsonl``), each labelled with its line and
    candidate."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise ResultFormatError(f"cannot read {path!r}: {reason}") from None
    try:
        return [(path, ScoreResult.from_json(text))]
    except ResultFormatError as exc:
        lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
        if len(lines) < 2:
            raise ResultFormatError(f"{path}: {exc}") from None
    found = []
    for number, line in lines:
        try:
            result = ScoreResult.from_json(line)
        except ResultFormatError as exc:
            raise ResultFormatError(f"{path}:{number}: {exc}") from None
        candidate = clean(str(result.extra.get("candidate", "")))[:200]
        found.append((f"{path}:{number}" + (f" ({candidate})" if candidate else ""), result))
    return found


def cmd_export(args: argparse.Namespace) -> int:
    from pytest_scorewright.results.ctrf import ctrf_json
    from pytest_scorewright.results.junit import junit_xml

    if args.out:
        check_writable(args.out)
    result = ScoreResult.read(args.result)
    text = junit_xml(result) if args.junit else ctrf_json(result)
    if args.out:
        write_atomic(args.out, text)
        print(f"scorewright: wrote {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def _start_warm_parent() -> None:
    # Before the evaluator's modules import: the two take ~0.2 s each and overlap.
    from pytest_scorewright.warm.parent import prestart

    prestart()


def cmd_score(args: argparse.Namespace) -> int:
    _start_warm_parent()
    if args.out:
        check_writable(args.out)  # before any work: an unwritable path is a usage error
    fitness, meta = fitness_from_args(args)
    # Closed before the command returns: the warm parent, too, ends with the command.
    with evaluator_from_args(args) as evaluator:
        result = with_fitness(evaluator.score(args.candidate), fitness, meta)
    if args.out:
        result.write(args.out)
        for line in summary_lines(result, out=args.out):
            print(line, file=sys.stderr)
    else:
        sys.stdout.write(result.to_json())
    return _below(result, args.fail_under)


def cmd_reward(args: argparse.Namespace) -> int:
    """``scorewright reward``: the trusted reward channel (pytest_scorewright/reward_file.py)."""
    import pytest_scorewright.reward_file as reward_file
    from pytest_scorewright.task_dirs import verdict
    from pytest_scorewright.verifiers import judged

    nonce = reward_file.require_nonce(os.environ.get(reward_file.NONCE_ENV))
    directory = Path(args.reward_dir)
    reward_file.clear(directory)  # before anything runs: a planted file never survives
    fitness, meta = fitness_from_args(args)
    with evaluator_from_args(args) as evaluator:
        result = with_fitness(evaluator.score(args.candidate), fitness, meta)
    try:
        _, score = judged(result, fitness)
    except InfrastructureError as exc:
        print(f"scorewright: no reward written: {exc}", file=sys.stderr)
        return 3
    if not 0.0 <= score <= 1.0:
        raise ConfigError(f"the fitness gives {score!r}, not in [0, 1]; reward files hold [0, 1]")
    reward_file.write(directory, reward_file.signed(result, score, verdict(result), nonce))
    print(f"scorewright: reward {score:.4f} ({verdict(result)}) in {directory}", file=sys.stderr)
    return 0


def _below(result: ScoreResult, fail_under: float | None) -> int:
    """``--fail-under``: exit 1 (for CI) when the credited pass rate is below it."""
    rate = result.signal("pass_rate")
    if fail_under is None or (rate is not None and rate >= fail_under):
        return 0
    shown = "unmeasured" if rate is None else f"{rate:.3f}"
    print(f"scorewright: pass rate {shown} is below --fail-under {fail_under:g}", file=sys.stderr)
    return 1


def cmd_score_many(args: argparse.Namespace) -> int:
    if args.out_dir is None and args.jsonl is None:
        raise ConfigError("score-many needs --out-dir DIR, --jsonl FILE (or -), or both")
    _start_warm_parent()
    from pytest_scorewright.sandbox.workspace import require_candidate

    out_dir = Path(args.out_dir) if args.out_dir is not None else None
    every = [require_candidate(c, "candidate") for c in args.candidates]
    every_name = _result_names(every)
    if out_dir is not None:
        check_writable(out_dir / every_name[0])
    kept = _kept(every, every_name, out_dir, args.jsonl) if args.resume else set()
    if kept:
        print(f"scorewright: --resume: {len(kept)}/{len(every)} already scored", file=sys.stderr)
    paths = [p for i, p in enumerate(every) if i not in kept]
    names = [n for i, n in enumerate(every_name) if i not in kept]
    if not paths:
        return 0
    if args.jobs == "auto":
        args.jobs, why = available_cores()
        print(f"scorewright: -j auto: {args.jobs} at once ({why})", file=sys.stderr)
    stream = _open_stream(args.jsonl, append=args.resume)
    fitness, meta = fitness_from_args(args)
    progress = sys.stderr.isatty()
    started = last_line = time.monotonic()
    flagged = failed = ours = done = 0
    best: float | None = None
    rows: list[tuple[float, str]] = []
    try:
        with evaluator_from_args(args) as evaluator:
            for done, (index, result) in enumerate(evaluator.score_many(paths, args.jobs), 1):
                judged = with_fitness(result, fitness, meta)
                if stream is not None:
                    _stream_line(stream, judged)
                if out_dir is not None:
                    judged.write(out_dir / names[index])
                rows.append(_batch_row(names[index], judged))
                flagged += result.integrity.flagged
                failed += not result.ok
                ours += result.infrastructure
                score = fitness_of(judged)
                best = score if score is not None and (best is None or score > best) else best
                now = time.monotonic()
                if progress:
                    line = f"\r[{done}/{len(paths)}] {names[index]}".ljust(60)
                    print(line, end="", file=sys.stderr)
                elif now - last_line >= PROGRESS_EVERY_S and done < len(paths):
                    last_line = now
                    rate = done / max(now - started, 1e-9)
                    print(
                        f"scorewright: {done}/{len(paths)} scored, {rate:.2f}/s, "
                        f"ETA {(len(paths) - done) / rate:.0f}s, best fitness "
                        f"{'-' if best is None else f'{best:.3f}'}, {flagged} flagged, "
                        f"{failed} not ok",
                        file=sys.stderr,
                        flush=True,
                    )
    except KeyboardInterrupt:
        # Every result written so far is whole (each file atomic, each JSON line flushed).
        print(f"\nscorewright: interrupted: {done}/{len(paths)} kept", file=sys.stderr)
        return 130
    finally:
        if stream is not None and stream is not sys.stdout:
            stream.close()
    if progress:
        print(file=sys.stderr)
    _print_batch_end(rows, names, paths, named=out_dir is not None)
    elapsed = time.monotonic() - started
    where = [str(w) for w in (out_dir, args.jsonl if args.jsonl != "-" else None) if w]
    print(
        f"scorewright: scored {len(paths)} candidates in {elapsed:.1f}s "
        f"({len(paths) / elapsed:.2f}/s) with -j {args.jobs}; {failed} not ok, {flagged} flagged; "
        + (f"{ours} not scored for reasons of ours (retry them); " if ours else "")
        + (f"results in {' and '.join(where)}" if where else "results on stdout"),
        file=sys.stderr,
    )
    return 0


def _kept(
    paths: Sequence[Path], names: Sequence[str], out_dir: Path | None, jsonl: str | None
) -> set[int]:
    """``--resume``: the candidates whose result is already in every output asked for (a
    result of ours, ``infrastructure``, is scored again)."""
    wanted: list[set[int]] = []
    if out_dir is not None:
        wanted.append({i for i, name in enumerate(names) if _kept_file(out_dir / name)})
    if jsonl is not None and jsonl != "-":
        where = {str(p): i for i, p in enumerate(paths)}
        wanted.append({where[c] for c in _kept_lines(Path(jsonl)) if c in where})
    return set.intersection(*wanted) if wanted else set()


def _kept_file(path: Path) -> bool:
    try:
        return not ScoreResult.read(path).infrastructure
    except (OSError, ScorewrightError):
        return False


def _kept_lines(path: Path) -> list[str]:
    """The candidates of the whole lines of a JSON Lines file; a last line cut short (the
    caller was killed while writing it) is cut off, so that what is appended stays whole."""
    try:
        data = path.read_bytes()
    except OSError:
        return []
    whole = data[: data.rfind(b"\n") + 1]
    if len(whole) != len(data):
        with path.open("r+b") as fh:
            fh.truncate(len(whole))
    found = []
    for line in whole.splitlines():
        try:
            result = ScoreResult.from_json(line)
        except ScorewrightError:
            continue
        candidate = result.extra.get("candidate")
        if isinstance(candidate, str) and not result.infrastructure:
            found.append(candidate)
    return found


def _open_stream(target: str | None, *, append: bool = False) -> TextIO | None:
    """The JSON Lines stream of ``--jsonl``: stdout for ``-``, else a file made empty now
    (added to, with ``--resume``)."""
    if target is None:
        return None
    if target == "-":
        return sys.stdout
    path = check_writable(target)
    try:
        return path.open("a" if append else "w", encoding="utf-8")
    except OSError as exc:
        raise OutputPathError(
            f"cannot write the results to {target!r}: {exc.strerror}; "
            "choose a path in a writable directory"
        ) from None


def _stream_line(stream: TextIO, result: ScoreResult) -> None:
    # One result a line, flushed as it is written: a caller killed mid-batch keeps every
    # line written before (the kernel holds what was flushed; a reader sees whole lines).
    stream.write(json.dumps(result.to_dict(), ensure_ascii=False, allow_nan=False) + "\n")
    stream.flush()


def _result_names(paths: Sequence[Path]) -> list[str]:
    """``<candidate>.json``; where two candidates share a name, the directories that tell
    them apart come first (``run-a-roman.json``, ``run-b-roman.json``), and a number only
    where nothing does (the same path twice)."""
    tails = [_name_parts(path) for path in paths]
    names: list[str] = []
    seen: dict[str, int] = {}
    for index, parts in enumerate(tails):
        depth = 1
        while depth < len(parts) and any(
            other[-depth:] == parts[-depth:] for j, other in enumerate(tails) if j != index
        ):
            depth += 1
        stem = "-".join(parts[-depth:])
        count = seen[stem] = seen.get(stem, 0) + 1
        names.append(f"{stem}.json" if count == 1 else f"{stem}-{count}.json")
    return names


def _plain_name(path: Path) -> str:
    return f"{_name_parts(path)[-1]}.json"


def _name_parts(path: Path) -> list[str]:
    """A candidate's path as name parts, outermost first: its file's stem (a directory's
    name) last, every part made safe for a file name."""
    full = path.resolve()
    last = full.stem if full.is_file() else full.name
    parts = [*full.parent.parts[1:], last] if full.parent != full else [last]
    return [re.sub(r"[^A-Za-z0-9._+-]", "_", part)[:60] or "_" for part in parts]


def _print_batch_end(
    rows: Sequence[tuple[float, str]], names: Sequence[str], paths: Sequence[Path], *, named: bool
) -> None:
    """The table of a batch's results and, where results were named after directories that
    tell candidates apart, which result is which candidate's."""
    for line in _batch_table(rows):
        print(f"  {line}", file=sys.stderr)
    renamed = [(n, p) for n, p in zip(names, paths, strict=True) if n != _plain_name(p)]
    if named and renamed:
        print("scorewright: named by the directories that tell them apart:", file=sys.stderr)
        for name, path in renamed[:TABLE_ROWS]:
            print(f"  {clean(name)} <- {clean(str(path))}", file=sys.stderr)


def _batch_row(name: str, result: ScoreResult) -> tuple[float, str]:
    """One line of the end-of-batch table (and its order: best fitness first), kept instead of
    the result: a batch of thousands keeps thousands of short lines, not results."""
    applicable = [t for t in result.tests if t.applicable]
    heldout = [t for t in applicable if t.heldout]
    passed = f"{sum(t.passed for t in applicable)}/{len(applicable)}"
    held = f"{sum(t.passed for t in heldout)}/{len(heldout)}" if heldout else "-"
    score = fitness_of(result)
    flags = [r.code for r in result.integrity.reasons if r.severity != "hint"]
    if result.error:
        flags.insert(0, "not scored" if result.infrastructure else "error")
    shown = clean(name)[:TABLE_NAME]
    line = (
        f"{shown:<{TABLE_NAME}}  {passed:>9}  {held:>9}  "
        f"{'-' if score is None else f'{score:.4g}':>7}  {', '.join(flags)[:60] or '-'}"
    )
    return (-score if score is not None else 1.0), line


def _batch_table(rows: Sequence[tuple[float, str]]) -> list[str]:
    """The end of a batch: a header, then at most :data:`TABLE_ROWS` lines, best first."""
    ordered = [line for _, line in sorted(rows, key=lambda row: row[0])]
    header = f"{'candidate':<{TABLE_NAME}}  {'passed':>9}  {'held-out':>9}  {'fitness':>7}  flags"
    lines = [header, *ordered[:TABLE_ROWS]]
    if len(ordered) > TABLE_ROWS:
        lines.append(f"... and {len(ordered) - TABLE_ROWS} more (scorewright show, report --html)")
    return lines


def cmd_leaderboard(args: argparse.Namespace) -> int:
    import pytest_scorewright.leaderboard as leaderboard

    if args.html:
        check_writable(args.html)
    fitness, _ = fitness_from_args(args)
    rows = leaderboard.rank(leaderboard.load(args.results), fitness)
    total = len(rows)
    rows = rows[: args.top] if args.top else rows
    sys.stdout.write(leaderboard.table(rows))
    if args.html:
        write_atomic(args.html, leaderboard.page(rows, fitness.name, plot=args.plot, total=total))
        print(f"scorewright: wrote {args.html}", file=sys.stderr)
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from pytest_scorewright.report import build

    outputs = [(name, path) for name in ("html", "json", "csv") if (path := getattr(args, name))]
    if not outputs:
        raise ConfigError("report needs --html FILE, --json FILE or --csv FILE (or several)")
    for _, path in outputs:
        check_writable(path)
    fitness, _ = fitness_from_args(args)
    report = build(args.runs, fitness, top=args.top)
    for name, path in outputs:
        write_atomic(path, getattr(report, name)())
    totals = report.figures["status_totals"]
    print(
        f"scorewright: {report.figures['results']} results, "
        + ", ".join(f"{n} {s}" for s, n in sorted(totals.items(), key=lambda t: -t[1]))
        + "; wrote "
        + " and ".join(path for _, path in outputs),
        file=sys.stderr,
    )
    return 0


def cmd_audit(args: argparse.Namespace) -> int:
    from pytest_scorewright.cli.audit import run_audit

    return run_audit(args)


def cmd_serve(args: argparse.Namespace) -> int:
    from pytest_scorewright.reward_service import serve

    server = serve(
        args.tasks, args.host, args.port, args.in_flight, args.store, args.queue,
        ray=args.ray, ray_actors=args.ray_actors, pipelines=args.pipelines, server=args.server,
    )  # fmt: skip
    where = f"http://{args.host}:{int(server.server_address[1])}"
    on = f" ({args.server})" if args.server != "embedded" else ""
    print(f"scorewright: serving {args.tasks} on {where}{on} (POST /score)", file=sys.stderr)

    def drain(signum: int, frame: object) -> None:
        # serve_forever returns once shutdown() is seen; shutdown() waits for that, so it
        # runs beside it. server_close() then joins every request under way: each is answered.
        print("scorewright: draining: no new requests, finishing those taken", file=sys.stderr)
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, drain)
    try:
        server.serve_forever()
    finally:
        server.server_close()
    print("scorewright: stopped", file=sys.stderr)
    return 0
