"""``run_phases``: a caller runs only the phases it needs, on its own budget.

Burn-in and verify-fix drive the engine from outside; these run real pytest
processes of a small generated project through a chosen list of phases.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from flakewarden.model.verdicts import DETERMINISTIC, INCONCLUSIVE
from flakewarden.stress.engine import BREAK, ISOLATION, REPEATS, TIMING, StressOptions, run_phases

PYTEST = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider"]


def _options(tmp_path: Path, test: str) -> StressOptions:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (project / "test_it.py").write_text(
        "def test_passes():\n    pass\n\n\ndef test_fails():\n    assert 1 == 2\n",
        encoding="utf-8",
    )
    return StressOptions(
        test_id=f"test_it.py::{test}",
        command=PYTEST,
        cwd=project,
        report_dir=tmp_path / "report",
        cores=2,
    )


def test_a_chosen_list_of_phases_runs_only_those(tmp_path: Path) -> None:
    options = _options(tmp_path, "test_fails")
    verdict = run_phases(options, [ISOLATION, REPEATS, BREAK], budget_seconds=120.0)
    assert verdict.verdict == DETERMINISTIC
    assert [(a.phase, a.knob) for a in verdict.arms] == [
        ("isolation", "baseline"),
        ("isolation", "in-process"),
    ]
    assert verdict.arms[0].runs == verdict.arms[0].failures == 10
    assert verdict.first_failure is not None and verdict.first_failure.phase == "isolation"
    assert "assert 1 == 2" in verdict.first_failure.traceback
    processes = sorted(p.name for p in (options.report_dir / "processes").iterdir())
    assert processes[0] == "0001-probe-as-given" and len(processes) == 1 + 10 + 2


def test_phases_that_find_nothing_leave_the_question_open(tmp_path: Path) -> None:
    options = _options(tmp_path, "test_passes")
    verdict = run_phases(options, [ISOLATION])
    assert verdict.verdict == INCONCLUSIVE and not verdict.quarantine_allowed
    assert "isolation" in verdict.reason
    assert [(a.phase, a.runs, a.failures) for a in verdict.arms] == [("isolation", 10, 0)]


def test_a_phase_needs_the_phases_whose_facts_it_reads(tmp_path: Path) -> None:
    options = _options(tmp_path, "test_passes")
    with pytest.raises(ValueError, match="the repeats phase needs isolation"):
        run_phases(options, [REPEATS, TIMING])
    assert not options.report_dir.exists()  # refused before anything ran
