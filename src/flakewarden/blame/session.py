"""Blame through one ``flakewarden run``: the diff before the tests, a measured attempt, the
verdicts after, the base check, and which failures the gate may forgive.

The change is measured on one attempt only, the first rerun, where only the failed tests
run: under the run's own coverage when it measures anyway (``--coverage``, ``--cov``), else
under a coverage of the changed files alone. Not attempt 1, even when it is measured: a
context switch writes coverage.py's data out, and one per test of a whole suite cost a
2,000-test run 17% (``benchmarks/bench_blame.py --coverage``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Callable, Optional

from flakewarden.changes import Diff, changes_since
from flakewarden.console import plural
from flakewarden.model import BlameRun, Outcome, RunReport, TestResult

from .judge import judge_report
from .measured import PROCESS_FOLDER, read_measured
from .plan import Plan, plan_for

Say = Callable[[str], None]
#: How many failed tests the base check runs at most.
MAX_BASE_CHECKS = 20


class Blame:
    """One run's blame. ``part_env`` and ``judge`` are the attempt loop's hooks.

    The diff is read by ``prepare``, beside attempt 1's process (the caller calls it while
    the tests start), or when first needed.
    """

    def __init__(
        self,
        cwd: Path,
        base: Optional[str],
        *,
        policy: str,
        report_dir: Path,
        command: Sequence[str],
        check_base: bool = False,
        base_timeout: float = 600.0,
        say: Say = lambda line: None,
    ) -> None:
        self.cwd, self.base = cwd, base
        self.report_dir, self.command = report_dir, list(command)
        self.check_base, self.base_timeout, self.say = check_base, base_timeout, say
        self.plan: Optional[Plan] = None
        self.run = BlameRun(base=base or "", policy=policy)
        self.measured_attempt: Optional[int] = None
        self._prepared = False
        self._untold: list[str] = []  # said once the tests' output is not streaming

    def prepare(self) -> None:
        """Read the diff (``base`` None: the pull request's base, else ``origin/HEAD``).

        What it has to say waits for ``tell``: it may run while pytest's output streams."""
        if self._prepared:
            return
        self._prepared = True
        found = changes_since(self.cwd, self.base, ignore_cosmetic=True)
        policy = self.run.policy
        if not isinstance(found, Diff):
            self._untold.append(f"blame: {found.reason}; going on without it")
            self.run = BlameRun(base=self.base or "", unavailable=found.reason, policy=policy)
            return
        self.plan = plan = plan_for(found)
        self.run = BlameRun(
            base=found.base,
            merge_base=found.merge_base,
            head=found.head,
            files=[f.path for f in found.files],
            changed_lines=plan.changed_lines,
            policy=policy,
        )
        self._untold.append(
            f"blame: against {found.base} (merge base {found.merge_base[:12]}): "
            f"{plural(plan.changed_lines, 'changed Python line')} in "
            f"{plural(len(plan.python), 'file')}, {plural(len(found.files), 'file')} changed"
        )

    def tell(self) -> None:
        """Say what ``prepare`` found, once."""
        self.prepare()
        for line in self._untold:
            self.say(line)
        self._untold = []

    def part_env(self, number: int, measure: bool, where: Path) -> dict[str, str]:
        """The measured attempt's processes get the plugin's plan; the others nothing."""
        if number != 2:
            return {}
        self.tell()
        if self.plan is None:
            return {}
        self.measured_attempt = number
        folder = where.absolute() / PROCESS_FOLDER
        folder.mkdir(parents=True, exist_ok=True)
        plan_file = folder / "plan.json"
        plan_file.write_text(json.dumps(self.plan.to_plugin(folder, measure)), encoding="utf-8")
        return {"FLAKEWARDEN_BLAME": str(plan_file)}

    def judge(self, report: RunReport, config: Optional[dict[str, Any]] = None) -> frozenset[str]:
        """Set each failed test's ``change`` (and ``base``); the failures the gate forgives.

        ``config``: attempt 1's pytest configuration (the plugin's record), which lets the
        base check collect only the failed tests' files."""
        self.tell()
        report.blame = self.run
        if self.plan is None:
            return frozenset()
        parts = self._measured_parts(report)
        wanted = [self.plan.absolute(p) for p in self.plan.python]
        measured = read_measured(parts, wanted, self.cwd)
        for problem in measured.problems:
            report.problems.append(f"blame: {problem}")
        judge_report(self.plan, report.tests, measured, report.rootdir)
        if self.check_base:
            self._check_base(report, config)
        forgiven = frozenset(
            test.id
            for test in report.tests
            if self.run.policy == "ignore-in-gate" and _forgivable(test)
        )
        self.run.ignored = sorted(forgiven)
        return forgiven

    def _measured_parts(self, report: RunReport) -> list[Path]:
        for attempt in report.attempts:
            if attempt.number == self.measured_attempt:
                directories = [attempt.directory] + [c.directory for c in attempt.continuations]
                return [self.report_dir / d for d in directories]
        return []

    def _check_base(self, report: RunReport, config: Optional[dict[str, Any]]) -> None:
        plan = self.plan
        assert plan is not None
        chosen = [
            test
            for test in report.tests
            if test.outcome in (Outcome.FAILED, Outcome.ERROR)
            and test.change is not None
            and test.change.verdict != "touches"
        ]
        if not chosen:
            return
        if len(chosen) > MAX_BASE_CHECKS:
            self.say(
                f"blame: {len(chosen)} failed tests ran none of the change or cannot tell; "
                f"the base check runs the first {MAX_BASE_CHECKS}"
            )
            chosen = chosen[:MAX_BASE_CHECKS]
        from .base_check import check_on_base

        self.say(f"blame: running {plural(len(chosen), 'failed test')} on the merge base")
        found = check_on_base(
            root=plan.root,
            merge_base=plan.diff.merge_base,
            cwd=self.cwd,
            command=self.command,
            test_ids=[test.id for test in chosen],
            work_dir=self.report_dir / "blame-base",
            timeout=self.base_timeout,
            say=self.say,
            config=config,
        )
        for test in chosen:
            test.base = found.get(test.id)


def _forgivable(test: TestResult) -> bool:
    """Failed every attempt, ran none of the change, and fails on the base too."""
    return (
        test.outcome in (Outcome.FAILED, Outcome.ERROR)
        and test.change is not None
        and test.change.verdict == "untouched"
        and test.base is not None
        and test.base.verdict == "fails"
    )
