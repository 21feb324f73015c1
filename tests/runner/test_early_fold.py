"""Attempt 1's final tests folded and rendered while the suite runs give the same reports.

A real ``run_attempts`` (real pytest processes, in a child interpreter) writes its
reports from the tests it rendered early; the same report is then written again with
nothing rendered early, and folded again from the attempts' own record files with
nothing folded early. Every byte must agree, and the early results must have been used
for exactly the tests that are final after attempt 1.
"""

from __future__ import annotations

from pathlib import Path

from helpers.project import Project, flaky_module

MIXED = """
import sys

import pytest


def test_pass():
    pass


def test_prints():
    print("out & <about>")
    sys.stderr.write("err")


@pytest.mark.skip(reason="not here & <now>")
def test_skip():
    pass


@pytest.mark.xfail(reason="known")
def test_xfail():
    assert False


@pytest.mark.parametrize(
    "v", ["a&b", "<x>", '"q"', "\\u2028", "##[error]x", "::warning::y", "\\x01"]
)
def test_param(v):
    pass


def test_bad():
    assert 1 == 2
"""

DRIVER = """
import json, sys
from pathlib import Path

from flakewarden.reports.report_json import write_reports
from flakewarden.runner.folding import fold, mark_collection_hints
from flakewarden.runner.process_results import read_results
from flakewarden.runner.reruns import run_attempts
from flakewarden.runner.run_options import RunOptions

root, out = Path(sys.argv[1]), Path(sys.argv[2])
command = [sys.executable, "-m", "pytest", "--keep-duplicates", "tests", "tests/test_twice.py"]
options = RunOptions(command=command, cwd=root, report_dir=out / "early", reruns=2)
report, rendered = run_attempts(options, lambda line: None)
write_reports(report, out / "early", rendered=rendered)
write_reports(report, out / "late")

records = {}
files = {}
for attempt in report.attempts:
    results = read_results(out / "early" / attempt.directory / "results.jsonl")
    for record in results.tests:
        records.setdefault(record.id, []).append((attempt.number, record))
    if results.collected_files is not None:
        files[attempt.number] = results.collected_files
refolded = fold(report.order, records, frozenset())
mark_collection_hints(refolded, files, records)
print(json.dumps({
    "rendered": [t.id for t in report.tests if rendered is not None and rendered.holds(t)],
    "outcomes": {t.id: t.outcome.value for t in report.tests},
    "same_fold": [t.to_json() for t in refolded] == [t.to_json() for t in report.tests],
}))
"""


def test_reports_from_early_folds_equal_reports_folded_at_the_end(
    project: Project, tmp_path: Path
) -> None:
    project.write("tests/test_mixed.py", MIXED)
    project.write("tests/test_flaky.py", flaky_module("flaky"))
    project.write("tests/test_twice.py", flaky_module("twice"))
    out = tmp_path / "out"
    seen = project.drive(DRIVER, str(project.root), str(out))

    outcomes = seen["outcomes"]
    assert outcomes["tests/test_flaky.py::test_flaky"] == "flaky"  # failed, rerun, passed
    assert outcomes["tests/test_mixed.py::test_bad"] == "failed"
    # Run twice in attempt 1 (--keep-duplicates): failed, then passed; folded from both.
    assert outcomes["tests/test_twice.py::test_twice"] == "flaky"
    final = sorted(
        tid
        for tid, outcome in outcomes.items()
        if outcome in ("passed", "skipped") and "test_twice" not in tid
    )
    assert len(final) == 11  # pass, prints, skip, xfail and the 7 parameters
    assert sorted(seen["rendered"]) == final
    assert seen["same_fold"] is True

    for name in ("report.json", "junit.xml"):
        early = (out / "early" / name).read_bytes()
        assert early == (out / "late" / name).read_bytes(), name
    junit = (out / "early" / "junit.xml").read_text(encoding="utf-8")
    assert '<skipped message="Skipped: not here &amp; &lt;now&gt;" />' in junit
    assert 'name="test_param[a&amp;b]"' in junit
