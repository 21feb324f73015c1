"""What the attempt loop has learned so far: the attempts, every record, the run's fate."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Optional

from flakewarden.runner.early_fold import EarlyFold
from flakewarden.runner.results import ProcessResults

if TYPE_CHECKING:
    from flakewarden.model import Attempt, TestRecord


@dataclasses.dataclass
class LoopState:
    """What the loop has learned so far."""

    attempts: list[Attempt] = dataclasses.field(default_factory=list)
    records: dict[str, list[tuple[int, TestRecord]]] = dataclasses.field(default_factory=dict)
    order: list[str] = dataclasses.field(default_factory=list)
    problems: list[str] = dataclasses.field(default_factory=list)
    exit_code: Optional[int] = None  # set when the run must end with this code
    not_green: bool = False  # collection errors or tests that never ran: at best exit 1
    interrupted: bool = False
    cutoff: bool = False
    rootdir: str = ""
    command: list[str] = dataclasses.field(default_factory=list)  # attempt 1's, as run
    first_config: Optional[dict[str, Any]] = None  # what the plugin saw in attempt 1
    running: list[str] = dataclasses.field(default_factory=list)  # when the last process ended
    early: EarlyFold = dataclasses.field(default_factory=lambda: EarlyFold(frozenset()))

    def add(self, number: int, results: ProcessResults) -> None:
        self.add_records(number, results.tests)

    def add_records(self, number: int, records: Sequence[TestRecord]) -> None:
        for record in records:
            self.records.setdefault(record.id, []).append((number, record))

    def failing_after_first(self) -> list[str]:
        """The tests whose last record in attempt 1 failed, in run order."""
        early = self.early
        return [
            tid
            for tid in self.order
            if not early.final(tid, last := self.records[tid][-1][1]) and last.outcome.is_failure
        ]

    def still_failing(self, ids: Sequence[str], number: int) -> list[str]:
        """Which of ``ids`` attempt ``number`` did not record passing (or did not run)."""
        failing = []
        for test_id in ids:
            mine = [r for n, r in self.records.get(test_id, []) if n == number]
            if not mine or mine[-1].outcome.is_failure:
                failing.append(test_id)
        return failing
