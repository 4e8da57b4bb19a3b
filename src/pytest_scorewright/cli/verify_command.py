"""``scorewright verify``: a repository task's verdict, written for the harness that asked
(SWE-bench's report.json, Harbor's reward.json, CTRF, the ScoreResult)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from pytest_scorewright.cli.verify_dataset import add_dataset_options, cmd_dataset
from pytest_scorewright.errors import ConfigError
from pytest_scorewright.limits import Limits
from pytest_scorewright.result import write_atomic
from pytest_scorewright.results.ctrf import ctrf_json
from pytest_scorewright.sandbox.workspace import private_tempdir
from pytest_scorewright.verify import RepoTask, Verdict, Verifier, read_ids
from pytest_scorewright.verify.checkout import export_base
from pytest_scorewright.verify.environment import (
    DEFAULT_CACHE,
    INSIDE,
    Environment,
    base_requirements,
    ensure_venv,
)


def add_verify_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "verify",
        help="Verify a patched repository against fail-to-pass and pass-to-pass tests "
        "(SWE-bench, Harbor), the parent deciding; exit 0 whenever a verdict was written",
    )
    p.add_argument("--repo", metavar="DIR", help="The task's git repository")
    p.add_argument("--base", metavar="COMMIT", help="The task's base commit")
    given = p.add_mutually_exclusive_group()
    given.add_argument("--patch", metavar="FILE", help="The candidate as a diff of the base")
    given.add_argument("--tree", metavar="DIR", help="The candidate as a whole tree")
    ids = "a test id, a JSON list of them, or @FILE; repeatable"
    p.add_argument("--fail-to-pass", action="append", metavar="IDS", help=ids)
    p.add_argument("--pass-to-pass", action="append", metavar="IDS", help=ids)
    p.add_argument("--test-patch", metavar="FILE", help="The task's own test change (a diff)")
    p.add_argument(
        "--gold", metavar="FILE", help="The task's own fix (a diff): evidence the base cannot give"
    )
    p.add_argument("--tests-dir", metavar="DIR", help="The tests directory (default: tests)")
    p.add_argument("--module", action="append", default=[], metavar="NAME", help="A package")
    p.add_argument(
        "--plugin", action="append", default=[], metavar="MODULE", help="A pytest plugin runs load"
    )
    p.add_argument(
        "--ini", action="append", default=[], metavar="KEY=VALUE", help="A pytest ini option"
    )
    p.add_argument(
        "--instance-id", default="task", metavar="ID", help="The task's name (default task)"
    )
    p.add_argument(
        "--timeout", type=float, default=60.0, metavar="S", help="Budget of a run (default 60)"
    )
    p.add_argument("--report", metavar="FILE", help="Write SWE-bench's report.json here")
    p.add_argument("--harbor", metavar="DIR", help="Write reward.json and reward-details.json here")
    p.add_argument("--ctrf", metavar="FILE", help="Write a CTRF report here")
    p.add_argument("--out", metavar="FILE", help="Write the ScoreResult here")
    p.add_argument(
        "--python",
        metavar="PYTHON",
        help="Verify with this interpreter (the task's environment; it needs "
        "pytest-scorewright installed)",
    )
    p.add_argument(
        "--venv",
        action="store_true",
        help="Verify in a venv built from the base commit's requirements, cached and reused "
        f"(under --venv-cache, default {DEFAULT_CACHE or '$XDG_CACHE_HOME/scorewright/venvs'})",
    )
    p.add_argument("--venv-cache", metavar="DIR", help="Where the venvs are kept (implies --venv)")
    p.add_argument(
        "--extra",
        action="append",
        default=[],
        metavar="NAME",
        help="An extra or dependency group of the base to install too (implies --venv)",
    )
    add_dataset_options(p)
    p.set_defaults(func=cmd_verify)


def cmd_verify(args: argparse.Namespace) -> int:
    venv = bool(args.venv or args.venv_cache or args.extra)
    if venv and args.python:
        raise ConfigError("--python names an environment and --venv builds one; give one")
    if os.environ.get(INSIDE) is None:  # not yet re-run in the task's environment
        if args.dataset and venv:
            return cmd_dataset(args, venvs=_venv_cache(args))
        if venv:
            _run_under(str(_environment(args).python), args.argv)
        elif args.python:
            _run_under(args.python, args.argv)
    ini: dict[str, str] = {}
    for item in args.ini:
        key, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"--ini {item!r} is not KEY=VALUE")
        ini[key] = ini[key] + "\n" + value if key in ini else value
    if args.dataset:
        return cmd_dataset(args)
    _require_one_task(args)
    task = RepoTask.of(
        args.repo,
        args.base,
        fail_to_pass=read_ids(args.fail_to_pass, "--fail-to-pass"),
        pass_to_pass=read_ids(args.pass_to_pass, "--pass-to-pass"),
        test_patch=args.test_patch,
        tests_dir=args.tests_dir,
        modules=args.module,
        instance_id=args.instance_id,
        plugins=args.plugin,
        ini=ini,
    )
    patch, gold = _read(args.patch, "--patch"), _read(args.gold, "--gold")
    with Verifier(task, gold=gold, limits=Limits(timeout_s=args.timeout)) as verifier:
        verdict = verifier.verify(patch=patch, tree=args.tree)
    _write(verdict, args)
    print(f"scorewright: {'resolved' if verdict.resolved else 'not resolved'}: ", end="")
    print(verdict.why or "every fail-to-pass and pass-to-pass test passed")
    return 0


def _require_one_task(args: argparse.Namespace) -> None:
    for option, value in (("--repo", args.repo), ("--base", args.base)):
        if not value:
            raise ConfigError(f"{option} is required (or give --dataset FILE for many tasks)")
    if not args.fail_to_pass:
        raise ConfigError("--fail-to-pass is required: the tests the candidate must fix")
    if not args.patch and not args.tree:
        raise ConfigError("give the candidate: --patch FILE or --tree DIR")


def _write(verdict: Verdict, args: argparse.Namespace) -> None:
    if args.report:
        write_atomic(args.report, json.dumps(verdict.swebench_report(), indent=2) + "\n")
    if args.harbor:
        os.makedirs(args.harbor, exist_ok=True)
        write_atomic(Path(args.harbor) / "reward.json", json.dumps(verdict.harbor_reward()) + "\n")
        details = Path(args.harbor) / "reward-details.json"
        write_atomic(details, json.dumps(verdict.details(), indent=2) + "\n")
    if verdict.result is not None:
        if args.ctrf:
            write_atomic(args.ctrf, ctrf_json(verdict.result))
        if args.out:
            verdict.result.write(args.out)


def _environment(args: argparse.Namespace) -> Environment:
    """The venv of the base commit's requirements (built, or reused from the cache)."""
    with private_tempdir("scorewright-base-") as tmp:
        base = Path(tmp) / "base"
        repo = Path(args.repo)
        if not (repo / ".git").exists():
            raise ConfigError(f"--repo {args.repo!r} is not a git repository; give its root")
        export_base(repo.resolve(), args.base, base)
        requirements = base_requirements(base, args.extra)
    env = ensure_venv(requirements, _venv_cache(args))
    what = "reused" if env.reused else "built"
    print(f"scorewright: {what} the task's venv {env.python.parent.parent}", file=sys.stderr)
    return env


def _venv_cache(args: argparse.Namespace) -> Path:
    if args.venv_cache:
        return Path(args.venv_cache).expanduser()
    if DEFAULT_CACHE is None:
        raise ConfigError(
            "--venv: this user has no home directory to keep venvs in; "
            "pass --venv-cache DIR (or set XDG_CACHE_HOME)"
        )
    return DEFAULT_CACHE


def _run_under(python: str, argv: list[str]) -> None:
    """Run this same command under ``python`` (the task's environment)."""
    if os.path.abspath(python) == os.path.abspath(sys.executable):
        return
    probe = [python, "-I", "-c", "import pytest_scorewright"]
    try:
        ok = subprocess.run(probe, capture_output=True, check=False, timeout=60).returncode == 0  # noqa: S603
    except OSError as exc:
        raise ConfigError(f"--python {python!r} cannot run ({exc.strerror})") from None
    if not ok:
        raise ConfigError(
            f"--python {python!r} cannot import pytest_scorewright; install it there "
            "(pip install pytest-scorewright)"
        )
    # A venv's python is often a link to this very interpreter: the marker, not the path,
    # tells the command it already runs in the task's environment. -I: the working directory
    # (an agent's repository, say) is not put on sys.path, so nothing there shadows ours.
    env = {**os.environ, INSIDE: python}
    command = [python, "-I", "-m", "pytest_scorewright.cli", *argv]
    os.execve(python, command, env)  # noqa: S606 (the task's interpreter, our own command)


def _read(path: str | None, option: str) -> bytes | None:
    """The diff file an option names (None where it is not given)."""
    if not path:
        return None
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(f"{option} {path!r} cannot be read ({exc.strerror})") from None
