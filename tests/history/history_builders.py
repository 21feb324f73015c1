"""Synthetic runs for the history's scores, written through the real report writer.

A run is a mapping of test id to its attempts in letters (``p`` passed, ``f``
failed, ``s`` skipped): ``"fp"`` is a flaky run, ``"fff"`` a hard failure.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from pathlib import Path
from typing import Optional

from flakewarden.history.store import HistoryStore
from flakewarden.model import Attempt, AttemptOutcome, AttemptResult, Outcome, RunReport, TestResult
from flakewarden.model.history import RunContext
from flakewarden.reports.report_json import read_report, write_reports

START = dt.datetime(2026, 11, 1, 6, 0, tzinfo=dt.timezone.utc)
_LETTERS = {"p": AttemptOutcome.PASSED, "f": AttemptOutcome.FAILED, "s": AttemptOutcome.SKIPPED}


def iso(moment: dt.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def test_result(test_id: str, word: str) -> TestResult:
    attempts = [
        AttemptResult(
            attempt=n + 1,
            outcome=_LETTERS[letter],
            duration=0.01,
            phase="call" if letter == "f" else "",
            message="assert 1 == 2" if letter == "f" else "",
        )
        for n, letter in enumerate(word)
    ]
    if word == "s":
        outcome = Outcome.SKIPPED
    elif "f" not in word:
        outcome = Outcome.PASSED
    elif word.endswith("p"):
        outcome = Outcome.FLAKY
    else:
        outcome = Outcome.FAILED
    return TestResult(test_id, "tests/test_x.py", 3, outcome, attempts)


def report(
    n: int,
    tests: Mapping[str, str],
    *,
    branch: str = "main",
    event: str = "push",
    pr_number: Optional[int] = None,
    base_branch: str = "",
    at: Optional[dt.datetime] = None,
    cutoff: bool = False,
) -> RunReport:
    """Run number ``n`` (an hour after run ``n - 1``), on GitHub Actions."""
    started = iso(at or START + dt.timedelta(hours=n))
    context = RunContext(
        repository="octo-org/octo-repo",
        workflow="CI",
        run_id=1000 + n,
        run_attempt=1,
        job="test",
        event=event,
        branch=branch,
        base_branch=base_branch,
        pr_number=pr_number,
        commit=f"{n:040x}",
        started_at=started,
        os="Linux",
        python="3.12.1",
        flakewarden_version="0.1.0",
    )
    results = [test_result(test_id, word) for test_id, word in tests.items()]
    command = ["python", "-m", "pytest"]
    return RunReport(
        command=command,
        rootdir="/work/proj",
        tests=results,
        attempts=[Attempt(number=1, command=command, reason="first run")],
        order=[t.id for t in results],
        exit_code=1 if any(t.outcome is Outcome.FAILED for t in results) else 0,
        started_at=started,
        finished_at=started,
        duration=1.0,
        version="0.1.0",
        cutoff=cutoff,
        context=context,
    )


def ingest(db: Path, reports: list[RunReport], where: Path) -> Path:
    """Write each report with the real writer, read it back and ingest it into ``db``."""
    with HistoryStore.open(db) as store:
        for number, made in enumerate(reports):
            directory = where / f"report-{number}"
            directory.mkdir(parents=True, exist_ok=True)
            write_reports(made, directory)
            store.ingest(read_report(directory), str(directory))
    return db
