"""Coverage figures are shown with the digits coverage.py shows, and old reports still read."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import coverage.results
import pytest
from helpers.report_builders import result, run_report
from helpers.workflow_commands import read_output_file

from flakewarden.model import CoverageSummary, Outcome
from flakewarden.model.coverage_figures import display_percent, fails_under
from flakewarden.reports.report_json import read_report, write_reports

TOTALS = [0.0, 0.004, 0.04, 0.5, 1 / 3 * 100, 49.995, 78.19047619047619, 99.4, 99.5, 99.95]
TOTALS += [99.994, 99.996, 99.9999, 100.0, 900 / 11, 250 / 3]


def coverage_display(total: float, precision: int) -> str:
    """coverage.py's own display of a total, in whichever form this version offers it."""
    display = getattr(coverage.results, "display_covered", None)
    if display is not None:
        return str(display(total, precision))
    return str(coverage.results.Numbers(precision=precision).display_covered(total))  # type: ignore[attr-defined]


@pytest.mark.parametrize("precision", [0, 1, 2, 3])
def test_display_is_coverage_reports_own(precision: int) -> None:
    for total in TOTALS:
        assert display_percent(total, precision) == coverage_display(total, precision), total


@pytest.mark.parametrize("precision", [0, 1, 2])
def test_gate_is_coverage_fail_under(precision: int) -> None:
    for total in TOTALS:
        for fail_under in (0, 50, 78.19, 78.2, 81.9, 82, 99.5, 99.99, 100):
            expected = coverage.results.should_fail_under(total, fail_under, precision)
            assert fails_under(total, fail_under, precision) is expected, (total, fail_under)


def test_report_json_keeps_the_exact_total_and_its_precision() -> None:
    summary = CoverageSummary(percent=900 / 11, precision=2, fail_under=81.9, files_combined=2)
    data = summary.to_json()
    assert data["percent"] == 900 / 11
    assert data["precision"] == 2
    assert data["percent_display"] == "81.82"
    back = CoverageSummary.from_json(json.loads(json.dumps(data)))
    assert back == summary
    assert back.below_threshold is True
    assert back.gate_message == "total of 81.82 is less than fail-under=81.90"
    assert CoverageSummary(percent=None).to_json()["percent_display"] is None


def old_report_json(tmp_path: Path) -> Path:
    """A report.json as schema 1 was written before the precision was kept."""
    ok = result("t.py::ok", Outcome.PASSED, failures=0, runs=1)
    rep = run_report([ok], command=["pytest"], rootdir=str(tmp_path))
    report_dir = tmp_path / "report"
    write_reports(rep, report_dir)
    path = report_dir / "report.json"
    data = json.loads(path.read_text())
    data["coverage"] = {
        "percent": 78.0,
        "data_file": ".coverage",
        "xml_file": "coverage.xml",
        "branch": False,
        "files_combined": 2,
        "fail_under": 80.0,
        "errors": [],
    }
    path.write_text(json.dumps(data))
    return report_dir


def test_old_report_json_is_read_and_shown_with_the_digits_it_has(tmp_path: Path) -> None:
    report_dir = old_report_json(tmp_path)
    summary = read_report(report_dir).coverage
    assert summary is not None
    assert (summary.percent, summary.precision, summary.percent_display) == (78.0, None, "78")
    assert summary.below_threshold is True
    assert summary.gate_message == ""

    outputs = tmp_path / "outputs"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_"))}
    env.update(GITHUB_ACTIONS="true", GITHUB_OUTPUT=str(outputs))
    env["GITHUB_STEP_SUMMARY"] = str(tmp_path / "summary")
    done = subprocess.run(
        [sys.executable, "-m", "flakewarden", "publish", "--report-dir", str(report_dir)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert read_output_file(outputs)["coverage"] == "78"
    assert "Coverage: **78%** (below the 80% threshold)" in (tmp_path / "summary").read_text()
