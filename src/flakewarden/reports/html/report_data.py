"""``report.html``'s data: the run as the page shows it, bounded in size.

Every test is a row (outcome, attempts, duration, first failure); the tests that did not
simply pass carry their attempts in full (traceback, captured output, what was raised),
clipped under one budget so a run where the suite fell over still gives a page a browser
opens at once. Flaky tests come first, then the failures, then the rest.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional

from flakewarden.model import AttemptResult, Outcome, RunReport, TestResult, id_key
from flakewarden.model.raised import raised_text
from flakewarden.reports import blame_text
from flakewarden.reports.cause_text import shared_causes
from flakewarden.reports.html.clip import Budget, clip
from flakewarden.reports.html.coverage_files import FileCoverage, read_file_coverage

#: The order of the table before anyone sorts it.
ORDER = {
    Outcome.FLAKY: 0,
    Outcome.FAILED: 1,
    Outcome.ERROR: 2,
    Outcome.QUARANTINED: 3,
    Outcome.PASSED: 4,
    Outcome.SKIPPED: 5,
}
#: Characters the page spends on tracebacks and output, all tests together (~3 MB).
DETAIL_BUDGET = 3_000_000
TRACEBACK_LIMIT = 20_000
OUTPUT_LIMIT = 8_000
MESSAGE_LIMIT = 400
ID_LIMIT = 2_000  # a test id longer than this (a generated parametrisation) is clipped
_LETTERS = {"passed": "p", "failed": "f", "error": "e", "skipped": "s", "crashed": "c"}


def run_state(report: RunReport) -> str:
    """The run in one word, as the job summary's headline says it."""
    if report.interrupted or report.exit_code == 2:
        return "interrupted"
    if report.exit_code == 5:
        return "no tests collected"
    if report.exit_code in (3, 4):
        return "could not run"
    return "passed" if report.exit_code == 0 else "failed"


def ordered(tests: Sequence[TestResult]) -> list[int]:
    """Indexes of ``tests``: flaky first, then failed, error, quarantined, passed, skipped."""
    return sorted(range(len(tests)), key=lambda n: ORDER.get(tests[n].outcome, 9))


def _where(test: TestResult, attempt: AttemptResult, report: RunReport) -> str:
    directory = next(
        (a.directory for a in report.attempts if a.number == attempt.attempt and a.directory),
        "",
    )
    return (
        f"report.json ({directory}/ holds the attempt's raw output)"
        if directory
        else ("report.json")
    )


def _attempt(attempt: AttemptResult, where: str, budget: Budget) -> dict[str, Any]:
    item: dict[str, Any] = {
        "n": attempt.attempt,
        "o": attempt.outcome.value,
        "d": round(attempt.duration, 3),
    }
    if attempt.phase:
        item["phase"] = attempt.phase
    if attempt.message:
        item["m"] = clip(attempt.message, MESSAGE_LIMIT * 4, where)
    texts = (
        ("tb", attempt.longrepr, TRACEBACK_LIMIT),
        ("out", attempt.stdout, OUTPUT_LIMIT),
        ("err", attempt.stderr, OUTPUT_LIMIT),
    )
    for key, text, limit in texts:
        if text:
            item[key] = budget.take(text, limit, where)
    if attempt.raised:
        item["raised"] = raised_text(attempt.raised)
    failed = [s for s in attempt.subtests if s.failed]
    if failed:
        item["sub"] = [[s.description, clip(s.message, MESSAGE_LIMIT, where)] for s in failed[:50]]
    if attempt.retries:
        item["retries"] = [
            f"{r.times} x {r.exception.rpartition('.')[2]} in {r.function}: {r.message}"[:300]
            for r in attempt.retries[:20]
        ]
    return item


def _notes(test: TestResult, quarantined: bool) -> list[str]:
    notes = []
    if quarantined and test.outcome is not Outcome.QUARANTINED:
        notes.append("quarantined: a failure would be reported, not block the build")
    if test.not_rerun:
        notes.append(f"not rerun: {test.not_rerun}")
    if test.collection_hint:
        evidence = f": {test.collection_evidence}" if test.collection_evidence else ""
        notes.append(f"may depend on what collecting other test modules does{evidence}")
    if test.retried_inside:
        notes.append(f"retried inside the test: {test.retried_inside}")
    blame = blame_text.phrase(test)
    if blame:
        notes.append(f"blame: {blame}")
    return notes


def _row(test: TestResult, quarantined: bool) -> dict[str, Any]:
    failure = test.first_failure
    message = ""
    if failure is not None:
        message = failure.message or (f"{failure.phase} failed" if failure.phase else "")
    elif test.outcome is Outcome.SKIPPED and test.attempts:
        message = test.attempts[-1].message
    row: dict[str, Any] = {
        "i": test.id if len(test.id) <= ID_LIMIT else test.id[:ID_LIMIT] + "...",
        "o": test.outcome.value,
        "d": round(test.duration, 3),
        "w": "".join(_LETTERS.get(a.outcome.value, "?") for a in test.attempts),
    }
    if test.file and not test.id.startswith(test.file + "::"):
        row["f"] = test.file
    if test.line is not None:
        row["l"] = test.line
    if message:
        row["m"] = message[:MESSAGE_LIMIT]
    if quarantined:
        row["q"] = 1
    return row


def _plain_pass(test: TestResult) -> bool:
    """One attempt that passed, with nothing to note (no retries inside, no blame)."""
    attempts = test.attempts
    return (
        len(attempts) == 1
        and test.outcome is Outcome.PASSED
        and not attempts[0].retries
        and test.change is None
        and test.base is None
        and not test.not_rerun
        and not test.collection_hint
    )


def _detailed(test: TestResult) -> bool:
    return test.outcome not in (Outcome.PASSED, Outcome.SKIPPED) or bool(test.retries)


def _context(report: RunReport) -> dict[str, Any]:
    ctx = report.context
    if ctx is None:
        return {}
    data = {k: v for k, v in ctx.to_json().items() if v not in ("", None)}
    if ctx.on_github:
        data["run_url"] = f"https://github.com/{ctx.repository}/actions/runs/{ctx.run_id}"
        if ctx.run_attempt:
            data["run_url"] += f"/attempts/{ctx.run_attempt}"
        if ctx.commit:
            data["commit_url"] = f"https://github.com/{ctx.repository}/commit/{ctx.commit}"
        if ctx.pr_number:
            data["pr_url"] = f"https://github.com/{ctx.repository}/pull/{ctx.pr_number}"
    return data


def _attempts(report: RunReport) -> list[dict[str, Any]]:
    rows = []
    for attempt in report.attempts:
        rows.append(
            {
                "n": attempt.number,
                "command": shlex.join(attempt.command),
                "reason": attempt.reason,
                "exit": attempt.exit_code,
                "d": round(attempt.duration, 3),
                "dir": attempt.directory,
                "selected": len(attempt.selected),
                "crash": attempt.crash,
                "problems": [
                    *(f"collection error: {e}"[:1000] for e in attempt.collection_errors[:20]),
                    *(f"disagrees with pytest: {d}"[:1000] for d in attempt.disagreements[:20]),
                ],
                "continuations": [
                    f"{shlex.join(c.command)}  ({c.reason})"[:2000] for c in attempt.continuations
                ],
            }
        )
    return rows


def _coverage(report: RunReport, report_dir: Optional[Path]) -> Optional[dict[str, Any]]:
    coverage = report.coverage
    if coverage is None:
        return None
    files: list[FileCoverage] = []
    left_out = 0
    if report_dir is not None and coverage.xml_file:
        files, left_out = read_file_coverage(report_dir / coverage.xml_file)
    return {
        "percent": coverage.percent_display or None,
        "fail_under": coverage.fail_under,
        "gate": coverage.gate_message,
        "branch": coverage.branch,
        "errors": coverage.errors[:20],
        "xml": coverage.xml_file,
        "files": [f.to_json() for f in files],
        "files_left_out": left_out,
    }


def report_data(report: RunReport, report_dir: Optional[Path] = None) -> dict[str, Any]:
    """What ``report.html`` shows, as plain JSON-able data."""
    known = frozenset(report.quarantine_known)
    order = ordered(report.tests)
    budget = Budget(DETAIL_BUDGET)
    rows = []
    details: dict[str, Any] = {}
    for position, index in enumerate(order):
        test = report.tests[index]
        quarantined = test.outcome is Outcome.QUARANTINED or (
            bool(known) and id_key(test.id) in known
        )
        if not quarantined and _plain_pass(test):  # most of a suite: the short path
            row: dict[str, Any] = {
                "i": test.id if len(test.id) <= ID_LIMIT else test.id[:ID_LIMIT] + "...",
                "o": "passed",
                "d": round(test.attempts[0].duration, 3),
                "w": "p",
            }
            if test.file and not test.id.startswith(test.file + "::"):
                row["f"] = test.file
            if test.line is not None:
                row["l"] = test.line
            rows.append(row)
            continue
        rows.append(_row(test, quarantined))
        notes = _notes(test, quarantined)
        if _detailed(test) or notes:
            details[str(position)] = {
                "attempts": [_attempt(a, _where(test, a, report), budget) for a in test.attempts]
                if _detailed(test)
                else [],
                "notes": notes,
            }
    return {
        "state": run_state(report),
        "run": {
            "command": shlex.join(report.command),
            "rootdir": report.rootdir,
            "started_at": report.started_at,
            "finished_at": report.finished_at,
            "duration": round(report.duration, 3),
            "exit_code": report.exit_code,
            "version": report.version,
            "reruns": report.reruns,
            "max_failures": report.max_failures,
            "cutoff": report.cutoff,
            "interrupted": report.interrupted,
            "shard": report.shard,
            "merged_from": report.merged_from[:50],
            "junit_from": report.junit_from[:50],
            "context": _context(report),
        },
        "totals": report.totals.to_json(),
        "problems": [p[:2000] for p in report.problems[:50]],
        "causes": [
            {"id": c.id, "text": c.sentence, "tests": list(c.tests), "more": c.more}
            for c in shared_causes(report)
        ],
        "attempts": _attempts(report),
        "coverage": _coverage(report, report_dir),
        "tests": rows,
        "details": details,
        "limits": {
            "clipped": budget.clipped,
            "dropped": budget.dropped,
            "quarantine_known": len(known),
        },
    }
