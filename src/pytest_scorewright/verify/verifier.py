"""The trusted verifier of a repository task: one prepared Evaluator per task (the base commit
as the reference, the task's tests as the suite), any number of candidates verified on it.

The repository's own package is the candidate, so it runs in the test process (isolation by
process cannot apply to a package its tests import and subclass); what the parent and the
integrity layer still guarantee there is in docs/verify.md."""

from __future__ import annotations

import os
import posixpath
import shutil
import tempfile
import threading
from pathlib import Path
from types import TracebackType
from typing import Any

import pytest_scorewright.verify.baseconfig as baseconfig
import pytest_scorewright.verify.checkout as workspace
from pytest_scorewright.errors import ConfigError
from pytest_scorewright.evaluator import Evaluator
from pytest_scorewright.limits import Limits
from pytest_scorewright.scoring.applicable import is_flaky
from pytest_scorewright.verify.infra import changes
from pytest_scorewright.verify.task import RUN_TESTS, RepoTask, run_id
from pytest_scorewright.verify.task_verdict import Verdict

#: More runs of the base before a listed test it does not hold is called a mistake of the
#: task's lists (one that then holds is flaky: quarantined).
BASE_RERUNS = 2


class InvalidTask(ConfigError):
    """The task's lists do not hold at its base: a test listed fail-to-pass passes there, one
    listed pass-to-pass does not, or one is skipped or flaky there. A dataset's instance so
    made is invalid: it would score a patch that changes nothing, or none at all."""


class Verifier:
    """Verify candidates of one repository task in the sandbox, the parent deciding.

    Example::

        task = RepoTask.of("repo/", "3f2c1e0", fail_to_pass=[...], pass_to_pass=[...])
        with Verifier(task) as verifier:
            verdict = verifier.verify(patch=Path("model.diff").read_bytes())
            verdict.resolved, verdict.swebench_report(), verdict.harbor_reward()

    ``gold``: the task's own fix (a diff against the base), where there is one. It is run once
    when preparing: at an assertion the base never reached (it failed first), a candidate's
    object is held against what the gold's was there, not against nothing (a fix that
    returns the library's own objects, as the gold does, is not taken for a liar).
    ``evaluator_options`` go to the :class:`~pytest_scorewright.Evaluator` (``limits``,
    ``workdir``, ``require_isolation``, ``network``...).
    """

    def __init__(
        self, task: RepoTask, *, gold: bytes | None = None, **evaluator_options: Any
    ) -> None:
        fixed_options = ("reference", "module", "isolation", "reference_baseline", "fail_to_pass")
        for fixed in (*fixed_options, "gold"):
            if fixed in evaluator_options:
                raise ConfigError(f"{fixed} is set by the verifier from the task; leave it out")
        self.task = task
        self._gold = gold
        self._options = {"limits": Limits(timeout_s=60), **evaluator_options}
        workdir = evaluator_options.get("workdir")
        self._root = Path(tempfile.mkdtemp(prefix="scorewright-verify-", dir=workdir))
        self._lock = threading.Lock()
        self._count = 0
        self._evaluator: Evaluator | None = None
        self.tests_dir = ""
        #: The base's pytest configuration: what runs get of it and what they do not.
        self.config = baseconfig.BaseConfig()
        self.run_ids: dict[str, str] = {}
        #: Listed tests flaky at the base: reported in each verdict, never deciding it.
        self.quarantined: tuple[str, ...] = ()

    @property
    def base(self) -> Path:
        """The base commit's files (no ``.git``): what every candidate starts from."""
        return self._root / "base"

    def prepare(self) -> Verifier:
        """Build the workspace, collect the task's tests and run the base as the reference;
        a mistake in the task is a one-line ConfigError here. Idempotent."""
        self._prepared()
        return self

    def _prepared(self) -> Evaluator:
        with self._lock:
            if self._evaluator is None:
                self._evaluator = self._build()
            return self._evaluator

    def _build(self) -> Evaluator:
        task = self.task
        workspace.export_base(task.repo, task.base, self.base)
        self.tests_dir = workspace.find_tests_dir(self.base, task.tests_dir)
        modules = task.modules or workspace.find_modules(self.base, self.tests_dir)
        tested = self._tested()
        self.config = self._base_config(tested)
        self.run_ids = {i: run_id(i, self.tests_dir, self.config.run_tests) for i in task.listed}
        suite = self._trusted_tests(tested)
        reference = self._root / "reference"
        workspace.copy_tree(self.base, reference)
        shutil.rmtree(reference / self.tests_dir)
        evaluator = Evaluator(
            suite,
            reference=reference,
            gold=self._gold_tree(),
            module=list(modules),
            isolation="in-process",
            reference_baseline=True,
            fail_to_pass=list(self.run_ids.values()),
            plugins=["pytest_timeout", *task.plugins],
            # The task's own options win over the base's.
            ini={**self.config.ini, **task.ini},
            **self._options,
        )
        try:
            self._check_listed(evaluator.prepare())
        except BaseException:
            evaluator.close()
            raise
        return evaluator

    def _gold_tree(self) -> Path | None:
        """The base with the gold patch applied and no tests, or None without one."""
        if self._gold is None:
            return None
        gold = self._root / "gold"
        workspace.copy_tree(self.base, gold)
        problem = workspace.apply_patch(gold, self._gold)
        if problem is not None:
            raise InvalidTask(f"the gold patch does not apply at the base: {problem}")
        shutil.rmtree(gold / self.tests_dir, ignore_errors=True)
        return gold

    def _tested(self) -> Path:
        """The base with the task's test patch applied: the trusted tree of the tests and of
        the pytest configuration they run with."""
        tested = self._root / "tested"
        workspace.copy_tree(self.base, tested)
        if self.task.test_patch is not None:
            problem = workspace.apply_patch(tested, self.task.test_patch.read_bytes())
            if problem is not None:
                raise ConfigError(f"the test patch does not apply to the base: {problem}")
        return tested

    def _base_config(self, tested: Path) -> baseconfig.BaseConfig:
        """The base's pytest configuration for the listed tests (never the candidate's)."""
        dirs = {posixpath.dirname(i.split("::", 1)[0]) for i in self.task.listed}
        start = posixpath.commonpath(sorted(dirs)) if "" not in dirs else ""
        roots = ("", "src") if (tested / "src").is_dir() else ("",)
        return baseconfig.read(
            tested, start, self.tests_dir, plugins=self.task.plugins, code_roots=roots
        )

    def _trusted_tests(self, tested: Path) -> Path:
        """The base's tests, the task's test patch applied, only the listed tests' files, and
        the base's conftest files above them (laid out as they lie below the rootdir)."""
        suite = self._root / "suite"
        inner = suite / self.config.run_tests.removeprefix(RUN_TESTS).lstrip("/")
        inner.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(tested / self.tests_dir, inner)
        for conftest in self.config.conftests:
            below = conftest[len(self.config.rootdir) + 1 :] if self.config.rootdir else conftest
            (suite / below).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(tested / conftest, suite / below)
        shutil.rmtree(tested)
        files = {i.split("::", 1)[0][len(self.tests_dir) + 1 :] for i in self.task.listed}
        missing = sorted(f for f in files if not (inner / f).is_file())
        if missing:
            raise ConfigError(
                f"test file {self.tests_dir}/{missing[0]} is not in the base's tests (with the "
                "test patch); check the test ids"
            )
        workspace.keep_listed_test_files(inner, files)
        return suite

    def _check_listed(self, evaluator: Evaluator) -> None:
        """The task's lists hold at the base: every listed test collected, the fail-to-pass
        ones failing and the pass-to-pass ones passing (with the test patch); else a
        one-line ConfigError naming every test that does not, a mistake of the task's."""
        learned = evaluator.learned()
        collected = {nodeid for nodeid, _ in learned.expected_visible}
        missing = [t for t, n in self.run_ids.items() if n not in collected]
        if missing:
            raise ConfigError(
                f"test(s) {', '.join(missing)} are not collected at the base (with the test "
                "patch); check the test ids"
            )
        found = learned.reference.applicability.get("visible")
        excluded = found.excluded if found is not None else {}
        passing = found.measured_passed if found is not None else frozenset()
        # Every listed test is measured (never excluded for failing at the base): what is
        # excluded was skipped, xfailed or flaky there, and cannot decide a verdict. A flaky
        # one is quarantined (listed in every verdict, not counted: SWE-smith's gold patches
        # that fail now and then); a skipped or xfailed one is a mistake of the lists.
        excluded_ids = {t for t, n in self.run_ids.items() if n in excluded}
        flaky = [t for t, n in self.run_ids.items() if n in excluded and is_flaky(excluded[n])]
        wrong = {
            t: f"{t} ({excluded[n].outcome})"
            for t, n in self.run_ids.items()
            if n in excluded and t not in flaky
        }
        wrong |= {t: f"{t} (passed)" for t in self.task.fail_to_pass if self.run_ids[t] in passing}
        wrong |= {
            t: f"{t} (not passed)"
            for t in self.task.pass_to_pass
            if self.run_ids[t] not in passing and self.run_ids[t] not in excluded
        }
        # Before the lists are called wrong, the base is run again: a test that then goes
        # the way its list says is flaky, not a mistake of the task's.
        flaky += self._flipping_at_base(evaluator, [t for t in wrong if t not in excluded_ids])
        self.quarantined = tuple(t for t in self.run_ids if t in flaky)
        refused = [said for test, said in wrong.items() if test not in flaky]
        if refused:
            raise InvalidTask(
                "the task's lists do not hold at the base (fail-to-pass tests must fail there, "
                f"pass-to-pass tests pass): {', '.join(refused)}; fix the lists, or give the "
                "tests what they need on this machine"
            )
        if all(t in self.quarantined for t in self.task.fail_to_pass):
            raise InvalidTask(
                "every fail-to-pass test is flaky at the base "
                f"({', '.join(self.task.fail_to_pass)}): nothing is left to decide a verdict; "
                "fix the tests or the lists"
            )

    def _flipping_at_base(self, evaluator: Evaluator, suspects: list[str]) -> list[str]:
        """Of ``suspects`` (listed tests the base's first run did not hold), those that go
        the way their list says in one of :data:`BASE_RERUNS` more runs of the base."""
        flipped: list[str] = []
        for attempt in range(BASE_RERUNS if suspects else 0):
            again = self._root / f"base-again-{attempt}"
            workspace.copy_tree(self.base, again)
            shutil.rmtree(again / self.tests_dir, ignore_errors=True)
            try:
                records = {t.nodeid: t for t in evaluator.score(again).tests}
            finally:
                shutil.rmtree(again, ignore_errors=True)
            for test in suspects:
                record = records.get(self.run_ids[test])
                should_pass = test in self.task.pass_to_pass
                if record is not None and record.passed == should_pass and test not in flipped:
                    flipped.append(test)
            if len(flipped) == len(suspects):
                break
        return flipped

    def verify(
        self,
        *,
        patch: bytes | None = None,
        tree: str | os.PathLike[str] | None = None,
    ) -> Verdict:
        """Verify one candidate: a unified diff against the base (``patch``; empty: no
        change) or a whole tree (``tree``, its ``.git`` never read)."""
        if (patch is None) == (tree is None):
            raise ConfigError("give the candidate as a patch or as a tree, not both or neither")
        evaluator = self._prepared()
        task = self.task
        with self._lock:
            self._count += 1
            candidate = self._root / f"candidate-{self._count}"
        try:
            if tree is not None:
                if not Path(tree).is_dir():
                    raise ConfigError(f"--tree {os.fspath(tree)!r} is not a directory")
                workspace.copy_tree(Path(tree), candidate)
            else:
                workspace.copy_tree(self.base, candidate)
                problem = workspace.apply_patch(candidate, patch or b"")
                if problem is not None:
                    return Verdict.not_applied(
                        task.instance_id, problem, task.fail_to_pass, task.pass_to_pass
                    )
            changed = changes(self.base, candidate, self.tests_dir)
            # The candidate's tests are never run: the suite is the task's, copied in fresh.
            shutil.rmtree(candidate / self.tests_dir, ignore_errors=True)
            result = evaluator.score(candidate)
            return Verdict.judge(
                task.instance_id,
                result,
                fail_to_pass=task.fail_to_pass,
                pass_to_pass=task.pass_to_pass,
                run_ids=self.run_ids,
                changes=changed,
                base_config=self.config.to_dict(),
                quarantined=self.quarantined,
            )
        finally:
            shutil.rmtree(candidate, ignore_errors=True)

    def close(self) -> None:
        if self._evaluator is not None:
            self._evaluator.close()
            self._evaluator = None
        shutil.rmtree(self._root, ignore_errors=True)

    def __enter__(self) -> Verifier:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
