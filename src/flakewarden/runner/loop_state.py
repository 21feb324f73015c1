"""What the attempt loop has learned so far: the attempts, every record, the run's fate."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Optional

from flakewarden.runner.early_fold import EarlyFold
from flakewarden.runner.process_results import ProcessResults

if TYPE_CHECKING:
    from flakewarden.model import Attempt, RerunPolicy, TestRecord


class LoopState:
    """What the loop has learned so far.

    A plain class, like the others the run makes before its tests start (its options,
    the part runner, the results being read, the attempt): importing ``dataclasses``
    (it brings ``inspect`` and ``ast``) would delay every run's first test by ~14 ms.
    """

    def __init__(self, early: EarlyFold) -> None:
        self.early = early  # attempt 1's final tests, folded while it ran
        self.attempts: list[Attempt] = []
        self.records: dict[str, list[tuple[int, TestRecord]]] = {}
        self.order: list[str] = []
        self.problems: list[str] = []
        self.exit_code: Optional[int] = None  # set when the run must end with this code
        self.not_green = False  # collection errors or tests that never ran: at best exit 1
        self.interrupted = False
        self.cutoff = False
        self.rootdir = ""
        self.command: list[str] = []  # attempt 1's, as run
        self.first_config: Optional[dict[str, Any]] = None  # what the plugin saw in attempt 1
        self.running: list[str] = []  # when the last process ended
        self.not_rerun: dict[str, str] = {}  # test id -> why the rerun policy held it back
        self.collected_files: dict[int, list[str]] = {}  # attempt -> the test modules collected

    def add(self, number: int, results: ProcessResults) -> None:
        self.add_records(number, results.tests)
        if results.collected_files is not None:
            self.collected_files.setdefault(number, results.collected_files)

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

    def rerunnable(
        self, policy: Optional[RerunPolicy], ids: Sequence[str], say: Callable[[str], None]
    ) -> list[str]:
        """Which of the failing ``ids`` the rerun policy lets run again; the rest are noted.

        Each is judged by what its last failure raised: a test rerun for a timeout that
        then fails an assertion is not rerun again under ``rerun.only: TimeoutError``.
        """
        if policy is None or not policy.active:
            return list(ids)
        kept = []
        for test_id in ids:
            last = self.records[test_id][-1][1]
            refusal = policy.refusal(last.raised, last.crash)
            if refusal:
                self.not_rerun[test_id] = refusal
            else:
                kept.append(test_id)
        held = [test_id for test_id in ids if test_id in self.not_rerun]
        if held:
            more = f" and {len(held) - 5} more" if len(held) > 5 else ""
            say(f"not rerun, by the rerun policy: {', '.join(held[:5])}{more}")
        return kept

    def judge_session(self, results: ProcessResults, number: int) -> None:
        """Turn what pytest said about its session into an end of the run, when it must end."""
        from flakewarden.runner.sessions import judge_session

        verdict = judge_session(results, number)
        self.problems.extend(verdict.problems)
        self.not_green = self.not_green or verdict.not_green
        if verdict.exit_code is not None:
            self.exit_code = verdict.exit_code
