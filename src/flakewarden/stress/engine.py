"""Stress-running one test until the evidence supports a verdict.

The phases, in order, each one only when the previous ones left the question open:

1. probe: the user's command once, selecting the test: can it run at all, is
   pytest-randomly in use, what did pytest parse as positional arguments.
2. isolation: fixed order and seed, one run in each of 10 fresh processes;
   every one of them failing is a real break (``deterministic``), unless a
   seed makes it pass or a recorded run (``--order-from``) holds a pass of it:
   then it is brittle, and its state-setter is bisected (``brittle``). Then a
   few processes repeat it in-process: a test that passes its first run and
   fails its repeats leaks state into itself (non-idempotent), and no later
   phase repeats it in-process.
3. order (``--order-from``, fresh runs clean): replay the test's predecessors
   in the recorded order and bisect to the polluter (``order``).
4. seed (pytest-randomly in use): sweep seeds, then confirm that a failing seed
   fails every time and a passing seed never does; one run per process.
5. timing: interleaved rounds of baseline, switch interval 1e-5, CPU load and a
   duty-cycle throttle (escalated until the test runs 4x slower), weighed by a
   rule valid at any number of looks and ended by the evidence or the budget
   (``timing``, ``sequential``).

Processes after the probe are forked from a fork server where that is safe
(``launcher``), else spawned.

A found cause (order, seed, race) is the verdict, with any non-idempotence
noted; with none found, a non-idempotent test's verdict is ``non-idempotent``.

Each run's outcome comes from the plugin's per-test records, never from an
exit code: a collection or plugin error is not a test failure.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

from flakewarden.errors import UsageError
from flakewarden.model import AttemptOutcome, first_line
from flakewarden.model.verdicts import DETERMINISTIC, ERROR
from flakewarden.reports.report_json import claim_directory
from flakewarden.runner import pytest_args
from flakewarden.runner.process import plugin_dir, resolve_executable
from flakewarden.stress import stats
from flakewarden.stress.brittle import brittle_check
from flakewarden.stress.causes import seed_phase
from flakewarden.stress.order import order_phase
from flakewarden.stress.runs import NO_RANDOMLY, Job, Runner, StressOptions, log_tail
from flakewarden.stress.timing import timing_phase
from flakewarden.stress.verdict import Arm, Failure, Verdict

__all__ = ["Stress", "StressOptions"]

ISOLATION_PROCESSES = 10  # fresh processes, one run each
REPEAT_PROCESSES = 2  # then processes that repeat the test in-process
REPEAT_RUNS = 5
# When every first run fails but an in-process repeat passes: 0.85 ** 30 < 1%.
EXTRA_FRESH_PROCESSES = 20


class Stress(Runner):
    """One stress run of one test; ``run()`` returns the verdict."""

    def run(self) -> Verdict:
        resolve_executable(self.options.command, self.options.cwd)
        report_dir = self.options.report_dir
        claim_directory(report_dir, ("processes", "verdict.json", "verdict.md"))
        with plugin_dir() as plugin:
            self.plugin = plugin
            with self.launcher_context():
                return self._phases()

    def _phases(self) -> Verdict:
        broken = self._probe()
        if broken is not None:
            return broken
        isolation = self._isolation()
        assert self.probe is not None and self.probe.config is not None
        randomly = self.probe.config.get("randomly_seed") is not None
        all_failed = bool(isolation.runs) and isolation.failures == isolation.runs
        swept = False
        if all_failed and randomly:
            # Without pytest-randomly the random state is one more fixed seed: a test
            # that some seed makes pass is seed-dependent, or at least not a real break.
            swept = True
            found = seed_phase(self)
            if found is not None:
                return found
            sweep = next(a for a in self.arms if a.phase == "seed" and a.knob == "sweep")
            all_failed = sweep.failures == sweep.runs
        repeats = self._repeats(isolation)
        passed_repeats = repeats.repeat_runs - repeats.repeat_failures
        if all_failed and passed_repeats:
            # Every first run failed, yet a repeat in the same process passed: the failure
            # hangs on a fresh process's state (a cold start, a cache the first run builds).
            # Ten failing first runs cannot tell "always" from "85% of the time", so more
            # fresh runs decide before a flake is called a break.
            self.notes.append(
                f"every one of the first {isolation.runs} runs in a fresh process failed, "
                f"but {passed_repeats} of {repeats.repeat_runs} in-process repeats passed: "
                f"{EXTRA_FRESH_PROCESSES} more fresh processes decide whether it always fails"
            )
            self._fresh_runs(isolation, EXTRA_FRESH_PROCESSES)
            all_failed = isolation.failures == isolation.runs
        if all_failed:
            # A recorded pass weighs against a real break: the test may be brittle.
            brittle = brittle_check(self, isolation)
            if brittle.verdict is not None:
                return brittle.verdict
            return self.verdict(
                DETERMINISTIC,
                f"failed all {isolation.runs} of its first runs in {isolation.processes} fresh "
                "processes, in a fixed order and seed: a real break, not a flake"
                + ("; every pytest-randomly seed tried failed too" if swept else "")
                + (
                    f" (it fails every time a fresh process runs it, as CI does, although "
                    f"{passed_repeats} of {repeats.repeat_runs} in-process repeats passed)"
                    if passed_repeats
                    else f"; all {repeats.repeat_runs} in-process repeats failed too"
                )
                + brittle.clause,
                f"deterministic: every one of the first {isolation.runs} isolated runs, "
                "one per fresh process, failed",
                order=brittle.order,
            )
        if self.options.order_from is not None and isolation.failures == 0:
            found = order_phase(self)
            if found is not None:
                return found
        if randomly and not swept:
            found = seed_phase(self)
            if found is not None:
                return found
        return timing_phase(self, isolation)

    def _probe(self) -> Optional[Verdict]:
        test_id = self.options.test_id
        self.say(f"probe: running {test_id} once with the command as given")
        [result] = self.run_jobs([Job("probe", "as-given", [test_id])], 1)
        self.probe = result.results
        config = result.results.config
        if config is None:
            tail = log_tail(result.directory / "output.log")
            if result.exit_code == 4:
                raise UsageError(f"pytest rejected the command: {first_line(tail) or tail[-300:]}")
            self.first_failure = Failure(
                "probe", "as-given", result.number, 0, first_line(tail), tail
            )
            return self.verdict(
                ERROR,
                f"pytest never started its session with the flakewarden plugin "
                f"(exit code {result.exit_code}): {first_line(tail)}",
                "error: the test cannot run",
            )
        self.rootdir = Path(str(config.get("rootdir") or self.options.cwd))
        self.executable = str(config.get("executable") or sys.executable)
        self.split = pytest_args.split_with_invocation(self.options.command, config.get("args", []))
        self.positionals = [str(p) for p in config.get("file_or_dir", [])]
        if self.split is None:
            self.notes.append(
                "the command does not start pytest directly, so every process collects "
                "what the command collects and the plugin selects the test"
            )
            self.base_args = ["--tb=long"]
        if not result.records:
            if result.results.collect_errors:
                where, text = result.results.collect_errors[0]
                self.first_failure = Failure(
                    "probe", "as-given", result.number, 0, first_line(text), text
                )
                return self.verdict(
                    ERROR,
                    f"the test cannot be collected: {first_line(text)} (in {where or '.'})",
                    "error: collection failed, so no run of the test could start",
                )
            raise UsageError(
                f"{test_id} was not collected (rootdir {self.rootdir}); "
                "give the node id as pytest prints it, e.g. tests/test_x.py::test_y"
            )
        durations = [r.duration for r in result.records]
        self.test_seconds = max(0.001, sum(durations) / len(durations))
        if all(r.outcome == AttemptOutcome.SKIPPED for r in result.records):
            text = result.records[0].phases[-1].longrepr if result.records[0].phases else ""
            return self.verdict(
                ERROR,
                f"the test is skipped, so it cannot be stressed: {text}",
                "error: the test did not run",
            )
        return None

    def _isolation(self) -> Arm:
        arm = Arm("isolation", "baseline", command=self.reproduce([self.options.test_id]))
        self._fresh_runs(arm, ISOLATION_PROCESSES)
        self.arms.append(arm)
        return arm

    def _fresh_runs(self, arm: Arm, count: int) -> None:
        self.say(f"isolation: {count} fresh processes x 1 run")
        jobs = [
            Job("isolation", "baseline", [self.options.test_id], 1, NO_RANDOMLY)
            for _ in range(count)
        ]
        # Half the cores at most, like the timing phase's baseline: a timing-sensitive
        # test must not look broken because its own isolation runs crowded the machine.
        self.tally(arm, self.run_jobs(jobs, max(1, self.options.cores // 2)))

    def _repeats(self, isolation: Arm) -> Arm:
        """Repeat the test in-process and record whether it leaks state into itself.

        Non-idempotent: the repeats fail significantly more often than the
        first runs of fresh processes (one-sided Fisher, p < alpha) and some
        process passed its first run and then failed a repeat.
        """
        self.say(f"isolation: {REPEAT_PROCESSES} processes x {REPEAT_RUNS} in-process repeats")
        arm = Arm(
            "isolation",
            "in-process",
            repeat=REPEAT_RUNS,
            command=self.reproduce([self.options.test_id]),
        )
        job = Job("isolation", "in-process", [self.options.test_id], REPEAT_RUNS, NO_RANDOMLY)
        results = self.run_jobs([job] * REPEAT_PROCESSES, max(1, self.options.cores // 2))
        self.tally(arm, results)
        self.arms.append(arm)
        first_runs = isolation.first_runs + arm.first_runs
        first_failures = isolation.first_failures + arm.first_failures
        p = stats.fisher_greater(first_failures, first_runs, arm.repeat_failures, arm.repeat_runs)
        arm.p_value = p
        leaked = sum(
            1
            for result in results
            if any(r.iteration == 0 and not r.outcome.is_failure for r in result.records)
            and (
                result.died or any(r.iteration > 0 and r.outcome.is_failure for r in result.records)
            )
        )
        if not (p < stats.ALPHA and leaked):
            return arm
        self.non_idempotent = {
            "first_runs": first_runs,
            "first_failures": first_failures,
            "repeat_runs": arm.repeat_runs,
            "repeat_failures": arm.repeat_failures,
            "processes_passed_first_then_failed": leaked,
            "p_value": p,
            "rule": "one-sided Fisher exact test of in-process repeats against first runs "
            f"in a process, p = {p:.3g} < {stats.ALPHA}",
        }
        self.notes.append(
            f"non-idempotent: it passed {first_runs - first_failures}/{first_runs} first runs "
            f"in a process but failed {arm.repeat_failures}/{arm.repeat_runs} in-process "
            f"repeats (p = {p:.3g}): it leaks state into itself, so every later process "
            "runs it once"
        )
        return arm
