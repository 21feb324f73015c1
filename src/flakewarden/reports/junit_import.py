"""A run's report from another runner's JUnit XML: one flake policy for every suite.

Each testcase becomes a test whose id is the runner's own naming, ``classname::name``
(``com.acme.CartTest::addsItem`` from Surefire or Gradle, ``example.com/cart::TestAdd``
from gotestsum, ``cart adds an item::cart adds an item`` from jest-junit), or a bare
``name`` when there is no class; flakewarden's own ``junit.xml`` gives back its exact
pytest node ids. Its attempts are every run the file shows:

- Surefire's and Gradle's ``<flakyFailure>`` / ``<flakyError>`` are failed attempts
  before the pass; ``<rerunFailure>`` / ``<rerunError>`` failed attempts after the first
  failure;
- a testcase listed more than once (gotestsum's ``--rerun-fails``, pytest-rerunfailures'
  rows with ``--junitxml``, a test named in two shards' files) is one test whose rows are
  its attempts, in file order. A row before the last was rerun, so it failed, even where
  the runner kept no failure for it (pytest-rerunfailures writes empty rerun rows): it
  is counted a failed attempt, its message saying the runner kept no text.

Outcomes then fold as for pytest: failed on the last attempt is ``failed`` (``error``
when that was an error), failed before and passed last is ``flaky``, ``skipped``, and a
failed test in the quarantined set is ``quarantined``. File and line come from the XML
when it has them (pytest's ``xunit1``, flakewarden's own file), for annotations.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from flakewarden import __version__
from flakewarden.errors import UsageError
from flakewarden.model import (
    Attempt,
    AttemptOutcome,
    AttemptResult,
    Outcome,
    RunReport,
    TestResult,
    first_line,
    id_key,
)
from flakewarden.reports.junit_read import JUnitCase, JUnitRun, iter_junit_cases

#: A row the runner reran (not its last), written with no failure of its own.
NO_TEXT = "failed, then rerun by the runner (it kept no failure text for this attempt)"
MAX_FILES = 10_000

_ATTEMPT = {
    Outcome.PASSED: AttemptOutcome.PASSED,
    Outcome.FAILED: AttemptOutcome.FAILED,
    Outcome.ERROR: AttemptOutcome.ERROR,
    Outcome.SKIPPED: AttemptOutcome.SKIPPED,
    # A quarantined skip written by flakewarden: the failure it stood for.
    Outcome.QUARANTINED: AttemptOutcome.FAILED,
}


def junit_paths(patterns: Sequence[str], cwd: Path) -> list[Path]:
    """The files named by ``patterns`` (paths or globs, ``**`` recursive), each once, sorted
    within a pattern; a pattern that matches nothing is an error naming it."""
    found: dict[Path, None] = {}
    for pattern in patterns:
        full = pattern if os.path.isabs(pattern) else str(cwd / pattern)
        matches = sorted(glob.glob(full, recursive=True)) if glob.has_magic(pattern) else [full]
        files = [Path(m) for m in matches if Path(m).is_file()]
        if not files:
            raise UsageError(f"no JUnit XML file matches {pattern!r} (in {cwd})")
        found.update(dict.fromkeys(files))
        if len(found) > MAX_FILES:
            raise UsageError(f"more than {MAX_FILES} JUnit XML files match {pattern!r}")
    return list(found)


def test_id(case: JUnitCase) -> str:
    if case.nodeid:
        return case.nodeid
    classname, name = case.classname.strip(), case.name.strip() or case.name
    return f"{classname}::{name}" if classname else name


Row = tuple[int, JUnitCase]  # the file's position among those read, and the testcase


def read_cases(paths: Iterable[Path], problems: list[str]) -> dict[str, list[Row]]:
    """Every testcase of every file, grouped by test id, in first-seen order."""
    grouped: dict[str, list[Row]] = {}
    for index, path in enumerate(paths):
        for case in iter_junit_cases(path, problems):
            grouped.setdefault(test_id(case), []).append((index, case))
    return grouped


def fold_cases(test: str, rows: Sequence[Row], quarantined: frozenset[str]) -> TestResult:
    """One test from its rows: every run of every row an attempt, folded as for pytest.

    Only a row followed by another of the same file and suite was rerun by the runner;
    the same test in two files (two shards, two modules) keeps each row as recorded.
    """
    runs: list[JUnitRun] = []
    for index, (where, row) in enumerate(rows):
        shown = list(row.runs)
        later = rows[index + 1] if index + 1 < len(rows) else None
        rerun = later is not None and later[0] == where and later[1].suite == row.suite
        if rerun and all(run.outcome is Outcome.PASSED for run in shown):
            shown = [run._replace(outcome=Outcome.FAILED, message=NO_TEXT) for run in shown]
        runs.extend(shown)
    final = rows[-1][1]
    attempts = [_attempt(number, run, final.time) for number, run in enumerate(runs, 1)]
    last = attempts[-1].outcome
    if final.outcome is Outcome.QUARANTINED:
        outcome = Outcome.QUARANTINED
    elif last.is_failure:
        outcome = Outcome.ERROR if last is AttemptOutcome.ERROR else Outcome.FAILED
        if test in quarantined or id_key(test) in quarantined:
            outcome = Outcome.QUARANTINED
    elif any(a.outcome.is_failure for a in attempts):
        outcome = Outcome.FLAKY
    elif last is AttemptOutcome.SKIPPED:
        outcome = Outcome.SKIPPED
    else:
        outcome = Outcome.PASSED
    first = rows[0][1]
    return TestResult(test, first.file, first.line, outcome, attempts)


def _attempt(number: int, run: JUnitRun, time: float) -> AttemptResult:
    outcome = _ATTEMPT.get(run.outcome, AttemptOutcome.FAILED)
    failed = outcome.is_failure
    message = run.message or (first_line(run.text) if failed else "")
    if outcome is AttemptOutcome.SKIPPED:
        message = run.message or first_line(run.text)
    return AttemptResult(
        attempt=number,
        outcome=outcome,
        duration=time,
        phase="call" if outcome is AttemptOutcome.FAILED else "",
        message=message,
        longrepr=(run.text or run.message) if failed else "",
        stdout=run.stdout,
        stderr=run.stderr,
    )


def report_from_junit(
    paths: Sequence[Path], cwd: Path, quarantined: frozenset[str], command: list[str]
) -> RunReport:
    """The run's report from the files: one test per id, the files' problems kept."""
    import datetime
    import time

    started = time.monotonic()
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    problems: list[str] = []
    grouped = read_cases(paths, problems)
    tests = [fold_cases(test, rows, quarantined) for test, rows in grouped.items()]
    reruns = max((len(t.attempts) - 1 for t in tests), default=0)
    shown = ", ".join(str(p) for p in paths[:5]) + (" ..." if len(paths) > 5 else "")
    return RunReport(
        command=command,
        rootdir=str(cwd),
        tests=tests,
        attempts=[Attempt(1, command, f"read from JUnit XML: {shown}")],
        order=list(grouped),
        exit_code=0,
        started_at=now,
        finished_at=now,
        duration=time.monotonic() - started,
        version=__version__,
        problems=problems,
        reruns=reruns,
        quarantine_known=sorted(quarantined),
        uid=os.urandom(16).hex(),
        junit_from=[str(p) for p in paths],
    )
