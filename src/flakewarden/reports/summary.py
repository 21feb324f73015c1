"""``summary.md``: the Markdown a job summary shows for one run.

Test ids and failure lines are user data; they are escaped so a pipe cannot
break a table, HTML cannot render and an ``@name`` cannot notify anyone. GitHub
refuses a step summary over 1 MiB, so the text is capped below that and says
what it left out.
"""

from __future__ import annotations

from typing import Optional

from flakewarden.model import Outcome, RunReport, TestResult
from flakewarden.model.raised import short_name
from flakewarden.model.subtests import failed_histories
from flakewarden.reports.annotations import ANNOTATION_LIMIT, KINDS, plan_annotations
from flakewarden.reports.cause_text import shared_causes
from flakewarden.reports.markdown import CELL_LIMIT, escape
from flakewarden.reports.summary_blame import blame_notes, blame_phrase, judged

__all__ = ["CELL_LIMIT", "SUMMARY_LIMIT", "render_summary", "retried_inside"]

#: GitHub's limit is 1 MiB per step summary; stay well below it.
SUMMARY_LIMIT = 1024 * 1024 - 64 * 1024


COLLECTION_HINT = "may depend on what collecting other modules does"


def _size(lines: list[str]) -> int:
    return sum(len(line.encode("utf-8")) + 1 for line in lines)


def _headline(report: RunReport) -> str:
    totals = report.totals
    if report.interrupted or report.exit_code == 2:
        state = "interrupted"
    elif report.exit_code == 5:
        state = "no tests collected"
    elif report.exit_code in (3, 4):
        state = "could not run"
    elif report.exit_code == 0:
        state = "passed"
    else:
        state = "failed"
    notes = []
    if totals.flaky:
        notes.append(f"{totals.flaky} flaky")
    if totals.failed + totals.error:
        notes.append(f"{totals.failed + totals.error} failed")
    if totals.quarantined:
        notes.append(f"{totals.quarantined} quarantined")
    retried = len(retried_inside(report))
    if retried:
        notes.append(f"{retried} retried inside")
    tail = f" ({', '.join(notes)})" if notes else ""
    return f"## flakewarden: {state}{tail}"


def _totals_table(report: RunReport) -> list[str]:
    t = report.totals
    return [
        "| Tests | Passed | Flaky | Failed | Errors | Quarantined | Skipped |",
        "|---:|---:|---:|---:|---:|---:|---:|",
        f"| {t.tests} | {t.passed} | {t.flaky} | {t.failed} | {t.error} "
        f"| {t.quarantined} | {t.skipped} |",
    ]


def _location(test: TestResult) -> str:
    if not test.file:
        return ""
    where = test.file if test.line is None else f"{test.file}:{test.line}"
    return escape(where, CELL_LIMIT)


def _row(test: TestResult, blame_column: bool = False) -> str:
    failure = test.first_failure
    first = ""
    if failure is not None:
        first = failure.message or (f"{failure.phase} failed" if failure.phase else "")
    attempts = f"{len(test.failures)} of {len(test.attempts)} failed"
    if test.not_rerun:
        attempts += f"; {test.not_rerun}"
    if test.collection_hint:
        attempts += f"; {COLLECTION_HINT}"
        if test.collection_evidence:
            attempts += f" ({test.collection_evidence})"
    return (
        f"| {escape(test.outcome_text, CELL_LIMIT)} | {escape(test.id, CELL_LIMIT)} "
        f"| {escape(attempts, CELL_LIMIT)} "
        f"| {escape(first, CELL_LIMIT)} | {_location(test)} |"
        + (f" {blame_phrase(test)} |" if blame_column else "")
    )


def retried_inside(report: RunReport) -> list[TestResult]:
    """The tests that passed only after ``flakewarden.retry`` retried inside them."""
    return [test for test in report.with_outcome(Outcome.PASSED) if test.retries]


def _retried_row(test: TestResult) -> str:
    retries = test.retries
    first = f"{short_name(retries[0].exception)}: {retries[0].message}" if retries else ""
    attempts = f"0 of {len(test.attempts)} failed"
    return (
        f"| {escape(test.outcome_text, CELL_LIMIT)} | {escape(test.id, CELL_LIMIT)} | {attempts} "
        f"| {escape(first, CELL_LIMIT)} | {_location(test)} |"
    )


_TABLE_HEAD = [
    "| Outcome | Test | Attempts | First failure | Location |",
    "|---|---|---|---|---|",
]
# The failed and flaky tests' table when blame judged any of them.
_BLAME_HEAD = [
    "| Outcome | Test | Attempts | First failure | Location | Blame |",
    "|---|---|---|---|---|---|",
]


def _rerun_processes(report: RunReport) -> list[str]:
    """How the reruns' processes started, when some were not forked for a reason the user
    did not choose (forking turned off, coverage measured)."""
    from flakewarden.model.attempts import FORKED, FORKS_MEASURED, FORKS_OFF

    reruns = report.attempts[1:]
    forked = sum(1 for a in reruns if a.process == FORKED)
    chosen = (FORKS_OFF, FORKS_MEASURED)
    notes = [n for n in dict.fromkeys(a.process_note for a in reruns) if n and n not in chosen]
    if not reruns or not notes:
        return []
    text = f"{forked} of {len(reruns)} reruns forked from a warm pytest; a new process: "
    return [escape(text + "; ".join(notes[:3]), CELL_LIMIT * 4) + "."]


def _notes(report: RunReport) -> list[str]:
    lines: list[str] = []
    runs = len(report.attempts)
    if report.junit_from:
        files = len(report.junit_from)
        lines.append(
            f"Read from {files} JUnit XML file{'s' if files != 1 else ''} another runner wrote; "
            "each run a file shows of a test (its reruns included) is an attempt."
        )
    else:
        lines.append(
            f"{runs} attempt{'s' if runs != 1 else ''}; failed tests rerun up to "
            f"{report.reruns} time{'s' if report.reruns != 1 else ''}, each in a fresh process."
        )
        lines += _rerun_processes(report)
    if report.merged_from:
        shown = ", ".join(escape(m, CELL_LIMIT) for m in report.merged_from[:20])
        lines.append(f"Merged from {len(report.merged_from)} reports: {shown}.")
    elif report.shard:
        lines.append(f"Shard {escape(report.shard, CELL_LIMIT)} of the suite.")
    if report.cutoff:
        lines.append(
            f"More than {report.max_failures} tests failed, so none were rerun (`--max-failures`)."
        )
    held = sum(1 for test in report.tests if test.not_rerun)
    if held:
        lines.append(
            f"{held} failed test{'s were' if held != 1 else ' was'} not rerun by the rerun "
            "policy (`rerun.only` / `rerun.except`): what they raised is not a known-transient "
            "failure."
        )
    for problem in report.problems[:20]:
        lines.append(f"- {escape(problem, CELL_LIMIT)}")
    if len(report.problems) > 20:
        lines.append(f"- … and {len(report.problems) - 20} more problems in report.json")
    for attempt in report.attempts[:1]:
        for error in attempt.collection_errors[:20]:
            lines.append(f"- Collection error: {escape(error, CELL_LIMIT)}")
    return lines


def _causes(report: RunReport) -> list[str]:
    """The causes that failed several tests, first: one thing that went wrong, said once."""
    shared = shared_causes(report)
    if not shared:
        return []
    lines = ["### Causes", ""]
    for cause in shared:
        named = ", ".join(escape(test, CELL_LIMIT) for test in cause.tests)
        more = f" and {cause.more} more" if cause.more else ""
        lines.append(
            f"- {escape(cause.sentence, CELL_LIMIT * 2)} (cause `{cause.id}`): {named}{more}."
        )
    return [*lines, ""]


def _disagreements(report: RunReport) -> list[str]:
    """A loud block when flakewarden's records do not add up to pytest's own summary."""
    differing = [a for a in report.attempts if a.disagreements]
    if not differing:
        return []
    lines = [
        "> [!WARNING]",
        "> **flakewarden's records disagree with pytest's own summary line.** "
        "Some test pytest reported may be missing from this report or counted wrongly; "
        "see each attempt's `output.log`.",
        ">",
    ]
    for attempt in differing[:20]:
        text = "; ".join(attempt.disagreements)
        lines.append(f"> - Attempt {attempt.number}: {escape(text, CELL_LIMIT * 4)}")
    return [*lines, ""]


_SUBTEST_HEAD = [
    "| Test | Subtest | Outcome by attempt | First failure |",
    "|---|---|---|---|",
]


def _subtest_rows(tests: list[TestResult]) -> list[str]:
    rows = []
    for test in tests:
        for history in failed_histories(test.attempts):
            rows.append(
                f"| {escape(test.id, CELL_LIMIT)} | {escape(history.description, CELL_LIMIT)} "
                f"| {escape(history.text, CELL_LIMIT)} | {escape(history.message, CELL_LIMIT)} |"
            )
    return rows


def _coverage(report: RunReport) -> list[str]:
    coverage = report.coverage
    if coverage is None:
        return []
    lines = ["### Coverage", ""]
    if coverage.percent is None:
        lines.append("Coverage was requested but not measured.")
    else:
        text = f"Coverage: **{coverage.percent_display}%**"
        if coverage.fail_under is not None:
            verdict = "below" if coverage.below_threshold else "meets"
            reason = (
                f": {escape(coverage.gate_message, CELL_LIMIT)}" if coverage.gate_message else ""
            )
            text += f" ({verdict} the {coverage.fail_under:g}% threshold{reason})"
        text += f", combined from {coverage.files_combined} data files across attempts."
        lines.append(text)
    for error in coverage.errors[:20]:
        lines.append(f"- {escape(error, CELL_LIMIT)}")
    return [*lines, ""]


def _annotations(report: RunReport) -> list[str]:
    plan = plan_annotations(report)
    if not plan.total_dropped:
        return []
    parts = [f"{plan.dropped[kind]} {kind}s" for kind in KINDS if plan.dropped[kind]]
    return [
        f"{plan.total_dropped} annotations did not fit GitHub's limit of {ANNOTATION_LIMIT} "
        f"per type per step ({', '.join(parts)}); every test is listed here and in report.json.",
        "",
    ]


def _artifact(artifact_name: Optional[str]) -> list[str]:
    if not artifact_name:
        return []
    return [
        f"Evidence (report.json, junit.xml, rerun-report.txt, per-attempt logs and coverage) "
        f"is in the artifact **{escape(artifact_name, CELL_LIMIT)}**.",
        "",
    ]


def _fit(
    head: list[str], groups: list[tuple[list[str], list[str]]], tail: list[str], limit: int
) -> list[str]:
    """Add table rows while they fit in ``limit`` bytes; say how many were left out.

    A group's intro ends with its table head when it is not the tests' plain table.
    """
    reserve = 300  # the truncation notice
    budget = limit - _size(head) - _size(tail) - reserve
    for intro, _rows in groups:
        budget -= _size(intro) + _size(_TABLE_HEAD) + 1
    body: list[str] = []
    left_out = 0
    for intro, rows in groups:
        table_head = [] if intro[-1:] and intro[-1].startswith("|---") else _TABLE_HEAD
        shown: list[str] = []
        for row in rows:
            cost = _size([row])
            if left_out or cost > budget:
                left_out += 1
                continue
            budget -= cost
            shown.append(row)
        body.extend([*intro, *table_head, *shown, ""])
    if left_out:
        body.append(
            f"**{left_out} rows left out**: GitHub caps a step summary at 1 MiB. "
            "The full list is in report.json and junit.xml."
        )
        body.append("")
    return [*head, *body, *tail]


def _cut(text: str, limit: int) -> str:
    """A last resort when even the fixed parts do not fit: cut at a line and say so."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    notice = "\n**Summary truncated** to fit GitHub's step summary limit; see report.json.\n"
    room = limit - len(notice.encode("utf-8"))
    if room <= 0:
        return notice.encode("utf-8")[: max(0, limit)].decode("utf-8", errors="ignore")
    kept = data[:room].decode("utf-8", errors="ignore")
    if "\n" in kept:
        kept = kept[: kept.rindex("\n") + 1]
    return kept + notice


def render_summary(
    report: RunReport, *, artifact_name: Optional[str] = None, limit: int = SUMMARY_LIMIT
) -> str:
    """The job summary (and ``summary.md``) for one run, at most ``limit`` UTF-8 bytes."""
    head = [
        _headline(report),
        "",
        *_disagreements(report),
        *_totals_table(report),
        "",
        *blame_notes(report),
        *_notes(report),
        "",
        *_causes(report),
    ]
    hard = report.with_outcome(Outcome.FAILED, Outcome.ERROR)
    flaky = report.with_outcome(Outcome.FLAKY)
    quarantined = report.with_outcome(Outcome.QUARANTINED)
    groups: list[tuple[list[str], list[str]]] = []
    if hard or flaky:
        failing = [*hard, *flaky]
        column = judged(failing)
        intro = ["### Failed and flaky tests", "", *(_BLAME_HEAD if column else [])]
        groups.append((intro, [_row(t, column) for t in failing]))
    if quarantined:
        groups.append(
            (
                [
                    "### Quarantined tests",
                    "",
                    "These still ran; their failures are reported but do not fail the job.",
                    "",
                ],
                [_row(t) for t in quarantined],
            )
        )
    retried = retried_inside(report)
    if retried:
        groups.append(
            (
                [
                    "### Passed after retries inside the test",
                    "",
                    "`flakewarden.retry` retried a call inside these tests before they passed: "
                    "each retry is in report.json.",
                    "",
                ],
                [_retried_row(t) for t in retried],
            )
        )
    subtest_rows = _subtest_rows([*hard, *flaky, *quarantined])
    if subtest_rows:
        groups.append(
            (
                [
                    "### Failed subtests",
                    "",
                    "Each subtest that failed on some attempt, named as pytest names it.",
                    "",
                    *_SUBTEST_HEAD,
                ],
                subtest_rows,
            )
        )
    tail = [*_coverage(report), *_annotations(report), *_artifact(artifact_name)]
    lines = _fit(head, groups, tail, limit)
    return _cut("\n".join(lines).rstrip("\n") + "\n", limit)
