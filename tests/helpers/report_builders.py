"""Hand-built model objects for tests of the writers (summary, annotations, JUnit)."""

from __future__ import annotations

from typing import Optional

from flakewarden.model import AttemptOutcome, AttemptResult, Outcome, TestResult


def result(
    test_id: str,
    outcome: Outcome,
    *,
    failures: int = 1,
    runs: int = 2,
    message: str = "assert 1 == 2",
    file: str = "tests/test_a.py",
    line: Optional[int] = 7,
) -> TestResult:
    attempts = []
    for number in range(1, runs + 1):
        failed = number <= failures
        attempts.append(
            AttemptResult(
                attempt=number,
                outcome=AttemptOutcome.FAILED if failed else AttemptOutcome.PASSED,
                duration=0.01,
                phase="call" if failed else "",
                message=message if failed else "",
                longrepr=f"E   {message}" if failed else "",
            )
        )
    return TestResult(test_id, file, line, outcome, attempts)
