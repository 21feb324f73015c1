"""Hand-built model objects for tests of the writers (summary, annotations, JUnit)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

from flakewarden.model import AttemptOutcome, AttemptResult, Outcome, RunReport, TestResult


def run_report(tests: Sequence[TestResult] = (), **fields: Any) -> RunReport:
    """A run of ``tests`` in their order; a test names only the fields its check reads."""
    values: dict[str, Any] = {
        "command": ["python", "-m", "pytest"],
        "rootdir": "/r",
        "tests": list(tests),
        "attempts": [],
        "order": [t.id for t in tests],
        "exit_code": 0,
        "started_at": "2026-01-01T00:00:00+00:00",
        "finished_at": "2026-01-01T00:00:01+00:00",
        "duration": 1.0,
        "version": "0.1.0",
    }
    return RunReport(**{**values, **fields})


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
