"""A history for the dashboard tests, written through the real report writer and ingest.

Runs of a small suite on main, twelve hours apart: a flaky test and two more that fail
with the same cause (a shared connection pool's race, on a port that changes every run;
not the environment's, which the scores would count apart), a test
that broke in the last runs, a quarantined one, and a test whose id and failure message
are hostile markup.
"""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path

from flakewarden.history.store import HistoryStore
from flakewarden.model import (
    Attempt,
    AttemptOutcome,
    AttemptResult,
    Outcome,
    RunContext,
    RunReport,
    TestResult,
)
from flakewarden.reports.report_json import read_report, write_reports

START = dt.datetime(2026, 9, 7, 6, 0, tzinfo=dt.timezone.utc)
HOSTILE_ID = (
    "tests/test_h.py::test_x[<img src=x onerror=alert(1)></script><script>alert(2)</script>]"
)
HOSTILE_MESSAGE = "</script><img src=y onerror=alert(4)>\u2028 & <b>"
FLAKY = "tests/test_api.py::test_flaky_api"
SHARED = ["tests/test_api.py::test_orders", "tests/test_db.py::test_users", FLAKY]
BROKEN = "tests/test_math.py::test_broken_lately"
QUARANTINED = "tests/test_slow.py::test_quarantined"
STEADY = [f"tests/test_ok.py::test_ok_{n}" for n in range(8)]
RUNS = 40


def _pool_race(port: int) -> AttemptResult:
    text = (
        "    def connect(port):\n"
        f">       raise PoolExhausted(f'no free connection to 127.0.0.1:{port}')\n"
        f"E       conftest.PoolExhausted: no free connection to 127.0.0.1:{port}\n\n"
        "tests/conftest.py:12: PoolExhausted"
    )
    message = f"conftest.PoolExhausted: no free connection to 127.0.0.1:{port}"
    return AttemptResult(1, AttemptOutcome.FAILED, 0.2, "call", message, text)


def _failed(number: int, message: str, where: str) -> AttemptResult:
    text = f">       assert thing()\nE       AssertionError: {message}\n\n{where}: AssertionError"
    return AttemptResult(
        number, AttemptOutcome.FAILED, 0.1, "call", f"AssertionError: {message}", text
    )


def _passed(number: int = 1) -> AttemptResult:
    return AttemptResult(number, AttemptOutcome.PASSED, 0.05)


def run_report(n: int, rng: random.Random) -> RunReport:
    started = (START + dt.timedelta(hours=12 * n)).strftime("%Y-%m-%dT%H:%M:%SZ")
    tests = []
    for test_id in [*SHARED, BROKEN, QUARANTINED, HOSTILE_ID, *STEADY]:
        file = test_id.split("::")[0]
        if test_id in SHARED and rng.random() < (0.35 if test_id == FLAKY else 0.12):
            second = _passed(2)
            tests.append(
                TestResult(test_id, file, 5, Outcome.FLAKY, [_pool_race(5000 + n), second])
            )
        elif test_id == BROKEN and n >= RUNS - 4:
            attempts = [_failed(k, f"assert {n} == 4", "tests/test_math.py:9") for k in (1, 2, 3)]
            tests.append(TestResult(test_id, file, 8, Outcome.FAILED, attempts))
        elif test_id == QUARANTINED and n % 3 == 0:
            attempts = [_failed(k, "took too long", "tests/test_slow.py:4") for k in (1, 2, 3)]
            tests.append(TestResult(test_id, file, 3, Outcome.QUARANTINED, attempts))
        elif test_id == HOSTILE_ID and n % 5 == 0:
            tests.append(
                TestResult(
                    test_id,
                    file,
                    2,
                    Outcome.FLAKY,
                    [_failed(1, HOSTILE_MESSAGE, "tests/test_h.py:3"), _passed(2)],
                )
            )
        else:
            tests.append(TestResult(test_id, file, 1, Outcome.PASSED, [_passed()]))
    command = ["python", "-m", "pytest"]
    context = RunContext(
        repository="octo-org/octo-repo",
        workflow="CI",
        run_id=5000 + n,
        run_attempt=1,
        job="test",
        event="push",
        branch="main",
        commit=f"{n:040x}",
        started_at=started,
    )
    return RunReport(
        command=command,
        rootdir="/work/proj",
        tests=tests,
        attempts=[Attempt(number=1, command=command, reason="first run")],
        order=[t.id for t in tests],
        exit_code=1,
        started_at=started,
        finished_at=started,
        duration=1.0,
        version="0.1.0",
        quarantine_known=[QUARANTINED] if n >= 10 else [],
        context=context,
    )


def build_history(root: Path, runs: int = RUNS) -> Path:
    """``root/history.db`` with ``runs`` runs, each written as a report directory first."""
    rng = random.Random(5)
    db = root / "history.db"
    with HistoryStore.open(db) as store:
        for n in range(runs):
            directory = root / "reports" / str(n)
            directory.mkdir(parents=True, exist_ok=True)
            write_reports(run_report(n, rng), directory)
            store.ingest(read_report(directory), str(directory))
    return db
