"""Reading report.json back: one reader, clear errors, the documented exit codes."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from helpers.project import PYTHON
from helpers.report_builders import run_report

from flakewarden.errors import ReportError, ReportMissing
from flakewarden.model import Outcome, RunReport, TestResult
from flakewarden.reports.report_json import read_report, report_json

MALFORMED = [
    ("[]", "not a JSON object"),
    ('{"schema": 1, "tests": [1]}', "not a valid flakewarden report"),
    ('{"schema": 1, "tests": [{"id": "t", "outcome": "sideways"}]}', "not a valid"),
    ('{"schema": 2}', "schema 2 is not 1"),
    ("{not json", "cannot read"),
    ("", "cannot read"),
]


@pytest.mark.parametrize(("text", "message"), MALFORMED)
def test_malformed_reports_are_report_errors(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "report.json").write_text(text, encoding="utf-8")
    with pytest.raises(ReportError) as info:
        read_report(tmp_path)
    assert message in str(info.value)
    assert str(tmp_path / "report.json") in str(info.value)


def test_missing_report(tmp_path: Path) -> None:
    with pytest.raises(ReportMissing, match="run flakewarden run first"):
        read_report(tmp_path)


@pytest.mark.parametrize(("command", "code"), [("publish", 3), ("issues", 3)])
@pytest.mark.parametrize(("text", "message"), MALFORMED[:2])
def test_commands_reading_a_malformed_report(
    tmp_path: Path, command: str, code: int, text: str, message: str
) -> None:
    (tmp_path / "report.json").write_text(text, encoding="utf-8")
    done = subprocess.run(
        [PYTHON, "-m", "flakewarden", command, "--report-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == code, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("flakewarden: error: ") and message in line
    assert "Traceback" not in done.stderr


def test_report_json_round_trips_and_is_one_test_per_line() -> None:
    tests = [
        TestResult(id=f"t.py::test_{n}", file="t.py", line=n, outcome=Outcome.PASSED, attempts=[])
        for n in range(3)
    ]
    report = run_report(tests, order=["t.py::test_0"], version="0")
    text = report_json(report.to_json())
    assert json.loads(text) == report.to_json()
    test_lines = [line for line in text.splitlines() if line.strip().startswith('{"id"')]
    assert len(test_lines) == 3


def _plain(**fields: object) -> RunReport:
    return run_report(command=["pytest"], version="0", **fields)


def test_the_evidence_key_names_the_run_that_produced_a_result() -> None:
    merged = _plain(uid="m-1", origins={"t.py::flaky": "shard-2"})
    assert merged.evidence_key("t.py::flaky") == "shard-2"  # the shard that ran it
    assert merged.evidence_key("t.py::other") == "m-1"
    back = RunReport.from_json(json.loads(report_json(merged.to_json())))
    assert (back.uid, back.origins) == ("m-1", {"t.py::flaky": "shard-2"})
    # A report from before run ids: its coordinates stand for the run, the same every time.
    old, other = _plain(), _plain(shard="2/3")
    assert old.evidence_key("x") == _plain().evidence_key("y")
    assert old.evidence_key("x") != other.evidence_key("x")
    assert old.evidence_key("x").startswith("r-") and len(old.evidence_key("x")) == 34


@pytest.mark.parametrize("origins", [["a"], "a", 7, {"t.py::x": 3}, {"t.py::x": ""}])
def test_origins_that_are_not_strings_by_test_read_as_none(origins: object) -> None:
    data = _plain(uid="u").to_json()
    data["origins"] = origins
    report = RunReport.from_json(data)
    assert report.origins == {} and report.evidence_key("t.py::x") == "u"
