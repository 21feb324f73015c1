"""Attempt 1's final tests, folded and rendered while the rest of the suite still runs.

A test that attempt 1 recorded once, passed or skipped, is final: no rerun selects it,
so the run's fold would give it the very result it has now. Folding it (and rendering
its report items, ``reports.rendered``) as its record is read, in the thread that reads
the records on a core pytest does not use, leaves only the failed and the last few
tests to fold once the process exits. Whatever happens to a test later (it is
recorded a second time, its process crashes and a continuation records it, a rerun
runs it) the fold sees records other than the one kept here and folds it afresh.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from flakewarden.model import TestRecord, TestResult
    from flakewarden.reports.rendered import RenderedTests


class EarlyFold:
    """Takes attempt 1's records as they are read; ``folded`` is what ``fold`` may reuse."""

    def __init__(self, quarantined: frozenset[str]) -> None:
        self._quarantined = quarantined
        self._seen: set[str] = set()
        self.folded: dict[str, tuple[TestRecord, TestResult]] = {}
        self.rendered: Optional[RenderedTests] = None

    def final(self, test_id: str, record: TestRecord) -> bool:
        """True when ``record`` is the one record of ``test_id`` folded here (not failed)."""
        known = self.folded.get(test_id)
        return known is not None and known[0] is record

    def __call__(self, records: Sequence[TestRecord]) -> None:
        # Imported here, beside the tests, not before they start (the JUnit writer
        # brings ElementTree and its patterns); after the first batch, a dict lookup.
        from flakewarden.reports.rendered import RenderedTests
        from flakewarden.runner.folding import fold_test

        if self.rendered is None:
            self.rendered = RenderedTests()
        for record in records:
            if record.id in self._seen:  # recorded twice: folded from both, at the end
                self.folded.pop(record.id, None)
                continue
            self._seen.add(record.id)
            if record.outcome.is_failure:  # rerun, or folded with the other failures
                continue
            test = fold_test(record.id, [(1, record)], self._quarantined)
            self.folded[record.id] = (record, test)
            self.rendered.add(test)
