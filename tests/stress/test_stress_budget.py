"""The timing phase starts no round that cannot end within ``--budget-seconds``.

The stress run's clock is replaced by one that advances a fixed 30 s per batch
of processes, so what the budget allows is exact; the processes themselves are
real pytest runs of a real (passing) test. Only the probe and the timing phase
run (the phase under test, through ``run_phases``), to keep the processes few.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from helpers.project import make_project

from flakewarden.runner.process import plugin_dir
from flakewarden.stress.engine import TIMING, StressOptions, run_phases
from flakewarden.stress.runs import Job, JobResult, StressProcesses

STEP = 30.0  # simulated seconds per batch: a timing round is three batches, 90 s


class SteppedClock(StressProcesses):
    def __init__(self, options: StressOptions, plugin: Path) -> None:
        super().__init__(options, plugin)
        self.clock = 0.0

    def now(self) -> float:
        return self.clock

    def run_jobs(
        self, jobs: Sequence[Job], parallel: int, burn: int = 0, **options: Any
    ) -> list[JobResult]:
        results = super().run_jobs(jobs, parallel, burn, **options)
        self.clock += STEP
        return results


def test_a_round_that_would_end_past_the_budget_is_not_started(tmp_path: Path) -> None:
    project = make_project(tmp_path / "proj", {"test_ok.py": "def test_ok():\n    pass\n"})
    options = StressOptions(
        test_id="test_ok.py::test_ok",
        command=[sys.executable, "-m", "pytest", "-p", "no:randomly"],
        cwd=project,
        report_dir=tmp_path / "report",
        budget_seconds=150.0,
    )
    with plugin_dir() as plugin:
        stress = SteppedClock(options, plugin)
        verdict = run_phases(options, [TIMING], processes=stress)
    # The probe: 30 s; a round: 90 s. After one round (120 s) a second would end at
    # 210 s, past the budget; checking only for a spent budget started it.
    assert verdict.verdict == "not-reproducible"
    assert verdict.statistics["looks_taken"] == 1
    assert verdict.statistics["ended_by"] == "budget"
    # 20 clean runs per knob bound nothing near the margin: no quarantine on that.
    assert not verdict.bounded and not verdict.quarantine_allowed
    assert "--budget-seconds" in verdict.reason
    assert stress.clock == 120.0  # the probe and one round; no batch of a second one
    assert any("another would not fit" in note for note in verdict.notes), verdict.notes
