"""Does flakewarden's record of an attempt add up to what pytest itself reported?

The plugin copies the terminal reporter's own counts into a ``pytest_stats``
record at the end of each session (not scraped from the output, which ``-q``,
``-qq`` and ``-p no:terminal`` reshape). After each attempt the records the
plugin wrote are counted the way pytest's summary line counts reports — per
phase (a call failure and a teardown error are "1 failed, 1 error"), per subtest
— and compared with pytest's figures. Two checks:

- the totals per category (passed, failed, errors, skipped, xfailed, xpassed,
  in-process reruns, collection errors; subtests passed, failed, skipped — not
  after pytest-rerunfailures retried a test in-process, since it removes the
  retried run's subtest reports from pytest's counts);
- every test pytest counted as failed or errored is a failure in flakewarden's
  folded outcome for that attempt: the rule that nothing pytest failed may read
  as a pass.

A difference is a bug in flakewarden or a plugin that hides reports from it;
either way it must be seen, so each attempt that differs gets one console line
and a section in ``summary.md``. When pytest's figures are missing (no terminal
reporter, or the process died before its session finished) nothing is compared.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from flakewarden.console import one_line
from flakewarden.model import Attempt
from flakewarden.reports.annotations import headline
from flakewarden.runner.process_results import ProcessResults
from flakewarden.runner.summary_counts import SummaryCounts

#: The summary-line categories compared, in the order differences are listed.
TEST_CATEGORIES = ("passed", "failed", "error", "skipped", "xfailed", "xpassed", "rerun")
SUBTEST_OUTCOMES = ("passed", "failed", "skipped", "xfailed")
SHOWN_IDS = 5

Warn = Callable[[str], None]


def _int_map(value: Any) -> dict[str, int]:
    if not isinstance(value, dict):
        return {}
    out = {}
    for key, count in value.items():
        try:
            out[str(key)] = int(count)
        except (TypeError, ValueError):
            continue
    return out


def disagreements(
    results: ProcessResults, counted: Optional[SummaryCounts] = None
) -> Optional[tuple[list[str], bool]]:
    """Every way the records differ from pytest's counts, and whether pytest failed a test
    the records do not fail; None when pytest gave no counts. ``counted``: the records'
    counts, kept up while they were read."""
    stats = results.pytest_stats
    if not isinstance(stats, dict):
        return None
    theirs = _int_map(stats.get("tests"))
    their_subtests = _int_map(stats.get("subtests"))
    their_collect = _int_map(stats.get("collect"))
    ours, our_subtests = (counted or SummaryCounts()).counts(results)
    found = []
    for category in TEST_CATEGORIES:
        if ours[category] != theirs.get(category, 0):
            found.append(
                f"{category}: pytest {theirs.get(category, 0)}, flakewarden {ours[category]}"
            )
    # pytest-rerunfailures removes a retried run's subtest reports from pytest's counts
    # (some of them, depending on verbosity): subtests are then not comparable.
    rerun_in_process = ours["rerun"] or theirs.get("rerun", 0)
    for outcome in () if rerun_in_process else SUBTEST_OUTCOMES:
        if our_subtests[outcome] != their_subtests.get(outcome, 0):
            found.append(
                f"subtests {outcome}: pytest {their_subtests.get(outcome, 0)}, "
                f"flakewarden {our_subtests[outcome]}"
            )
    if len(results.collect_errors) != their_collect.get("error", 0):
        found.append(
            f"collection errors: pytest {their_collect.get('error', 0)}, "
            f"flakewarden {len(results.collect_errors)}"
        )
    failed_ids = stats.get("failed_ids") or []
    by_id = results.by_id() if failed_ids else {}
    not_failed = []
    for test_id in failed_ids:
        records = by_id.get(str(test_id))
        if not records or not any(r.outcome.is_failure for r in records):
            where = "not recorded" if not records else f"recorded {records[-1].outcome}"
            not_failed.append(f"{test_id} ({where})")
    if not_failed:
        shown = ", ".join(not_failed[:SHOWN_IDS])
        more = f" and {len(not_failed) - SHOWN_IDS} more" if len(not_failed) > SHOWN_IDS else ""
        found.append(
            f"pytest failed {len(not_failed)} test(s) that flakewarden did not: {shown}{more}"
        )
    return found, bool(not_failed)


def check_attempt(
    attempt: Attempt, results: ProcessResults, warn: Warn, counted: Optional[SummaryCounts] = None
) -> bool:
    """Compare one attempt's records with pytest's counts; record and warn on a difference.

    ``warn`` (the run's console) gets one line per attempt that differs, test ids
    escaped onto it; on GitHub the annotation comes later, from the report, once the
    tests' output is no longer fenced off from workflow commands.
    True when pytest failed a test that the records do not: the run cannot be green.
    """
    stats = results.pytest_stats
    if isinstance(stats, dict):
        attempt.pytest_summary = _int_map(stats.get("summary"))
    return _record(attempt, disagreements(results, counted), warn, "")


def check_continuation(
    attempt: Attempt,
    number: int,
    results: ProcessResults,
    warn: Warn,
    counted: Optional[SummaryCounts] = None,
) -> bool:
    """The same check for continuation ``number`` of ``attempt``, which ran its own session.

    A crashed process leaves no counts of pytest's to compare; each continuation that
    finished its session does, and is compared on its own. Its differences join the
    attempt's, each named by the continuation.
    """
    return _record(attempt, disagreements(results, counted), warn, f"continuation {number}: ")


def _record(
    attempt: Attempt, checked: Optional[tuple[list[str], bool]], warn: Warn, prefix: str
) -> bool:
    if checked is None or not checked[0]:
        return False
    found, missed_failure = checked
    found = [prefix + difference for difference in found]
    attempt.disagreements.extend(found)
    warn(one_line(f"warning: {headline(attempt.number, found)}"))
    return missed_failure
