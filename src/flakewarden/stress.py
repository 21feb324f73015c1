"""Stress-running one test until the evidence supports a verdict.

The phases, in order, each one only when the previous ones left the question open:

1. probe: the user's command once, selecting the test: can it run at all, is
   pytest-randomly in use, what did pytest parse as positional arguments.
2. isolation: fixed order and seed; every one of the first runs failing is a
   real break (``deterministic``), decided early.
3. order (``--order-from``, isolation clean): replay the test's predecessors in
   the recorded order and bisect to the polluter.
4. seed (pytest-randomly in use): sweep seeds, then confirm that a failing seed
   fails every time and a passing seed never does.
5. timing: interleaved rounds of baseline, switch interval 1e-5 and CPU burners
   at 1x and 2x the cores, compared with a group-sequential rule (``stats``).

Each run's outcome comes from the plugin's per-test records, never from an
exit code: a collection or plugin error is not a test failure.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

from . import pytest_args
from .errors import UsageError
from .model import AttemptOutcome, first_line
from .process import plugin_dir, resolve_executable
from .reports import claim_directory
from .stress_causes import order_phase, seed_phase
from .stress_runs import NO_RANDOMLY, Job, Runner, StressOptions, log_tail
from .stress_timing import timing_phase
from .verdict import DETERMINISTIC, ERROR, Arm, Failure, Verdict

__all__ = ["Stress", "StressOptions"]

ISOLATION_PROCESSES = 2
ISOLATION_REPEAT = 5


class Stress(Runner):
    """One stress run of one test; ``run()`` returns the verdict."""

    def run(self) -> Verdict:
        resolve_executable(self.options.command, self.options.cwd)
        report_dir = self.options.report_dir
        claim_directory(report_dir, ("processes", "verdict.json", "verdict.md"))
        with plugin_dir() as plugin:
            self.plugin = plugin
            return self._phases()

    def _phases(self) -> Verdict:
        broken = self._probe()
        if broken is not None:
            return broken
        isolation = self._isolation()
        if isolation.runs and isolation.failures == isolation.runs:
            return self.verdict(
                DETERMINISTIC,
                f"failed all {isolation.runs} of its first runs in {isolation.processes} fresh "
                "processes, in a fixed order and seed: a real break, not a flake",
                f"deterministic: every one of the first {ISOLATION_PROCESSES} x "
                f"{ISOLATION_REPEAT} isolated runs failed",
            )
        if self.options.order_from is not None and isolation.failures == 0:
            found = order_phase(self)
            if found is not None:
                return found
        assert self.probe is not None and self.probe.config is not None
        if self.probe.config.get("randomly_seed") is not None:
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
        self.say(f"isolation: {ISOLATION_PROCESSES} processes x {ISOLATION_REPEAT} runs")
        arm = Arm(
            "isolation",
            "baseline",
            repeat=ISOLATION_REPEAT,
            command=self.reproduce([self.options.test_id]),
        )
        jobs = [
            Job("isolation", "baseline", [self.options.test_id], ISOLATION_REPEAT, NO_RANDOMLY)
            for _ in range(ISOLATION_PROCESSES)
        ]
        # Half the cores at most, like the timing phase's baseline: a timing-sensitive
        # test must not look broken because its own isolation runs crowded the machine.
        self.tally(arm, self.run_jobs(jobs, max(1, self.options.cores // 2)))
        self.arms.append(arm)
        return arm
