"""Counting a process's records the way pytest's summary line counts its reports.

Per phase (a call failure and a teardown error are "1 failed, 1 error") and per
subtest; ``consistency`` compares the counts with pytest's own. ``SummaryCounts``
keeps them up while the records are read, so the comparison once the process exits
costs only the last few records.
"""

from __future__ import annotations

import collections
from typing import TYPE_CHECKING, Optional

from flakewarden.runner.process_results import ProcessResults

if TYPE_CHECKING:
    from flakewarden.model import PhaseRecord, TestRecord


def phase_category(phase: PhaseRecord) -> str:
    """The summary-line category pytest's own ``pytest_report_teststatus`` gives a phase.

    Mirrors pytest's three built-in hooks (skipping, runner, terminal) and
    pytest-rerunfailures' ``rerun``; "" is a report the line does not count.
    """
    if phase.outcome == "rerun":  # pytest-rerunfailures' own category, in any phase
        return "rerun"
    if phase.wasxfail and phase.outcome in ("skipped", "passed"):
        return "xfailed" if phase.outcome == "skipped" else "xpassed"
    if phase.when in ("setup", "teardown"):
        return {"failed": "error", "skipped": "skipped"}.get(phase.outcome, "")
    return phase.outcome


def recorded_counts(results: ProcessResults) -> tuple[collections.Counter[str], ...]:
    """(tests per category, subtests per outcome) as the plugin's records add up."""
    return SummaryCounts().counts(results)


class SummaryCounts:
    """``recorded_counts`` kept up while a process's records are read (``update`` after
    each batch), so the check once it exits counts only the last few.

    Counts are of one list of records, in the order it grows; given other results, or
    the same results with their list replaced (records dropped), it counts afresh.
    """

    def __init__(self) -> None:
        self._reset(None)

    def _reset(self, records: Optional[list[TestRecord]]) -> None:
        self._of = records
        self._counted = 0
        self.tests: collections.Counter[str] = collections.Counter()
        self.subtests: collections.Counter[str] = collections.Counter()

    def update(self, results: ProcessResults, *_: object) -> None:
        """Count the records added to ``results`` since the last call (an ``OnRecords``)."""
        records = results.tests
        if records is not self._of or len(records) < self._counted:
            self._reset(records)
        tests, subtests = self.tests, self.subtests
        for record in records[self._counted :]:
            for phase in record.phases:
                category = phase_category(phase)
                if category:
                    tests[category] += 1
            for sub in record.subtests:
                subtests["xfailed" if sub.wasxfail else sub.outcome] += 1
        self._counted = len(records)

    def counts(self, results: ProcessResults) -> tuple[collections.Counter[str], ...]:
        self.update(results)
        return self.tests, self.subtests
