"""What a run's causes cost: the signature of every failed attempt, computed once as the
attempt is recorded, and the causes every writer groups from them.

A run of ``--tests`` tests (default 10,000) in which ``--failing`` of them (default 1,000:
a storm of 900 sharing a refused connection, 100 failing on their own, each a 30-line
pytest traceback) failed their first attempt and passed the second. Interleaved pairs,
``--repeat`` times (default 9):

1. building the failed ``AttemptResult``s, with the signature computed (as a run does)
   against with it given (the work before causes existed);
2. ``write_reports`` of the whole run, its total and, timed apart, ``RunReport.causes``
   as computed once for report.json, once for the summary and once for report.html.

Medians, with the ratio of each pair.

    python benchmarks/bench_causes.py             # --tests 10000 --failing 1000 --repeat 9
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from flakewarden.model import (  # noqa: E402
    Attempt,
    AttemptOutcome,
    AttemptResult,
    Outcome,
    RunReport,
    TestResult,
)
from flakewarden.model.signatures import Signature  # noqa: E402
from flakewarden.reports.report_json import write_reports  # noqa: E402


def _longrepr(n: int, storm: bool) -> str:
    frames = "".join(f"    x{k} = helper({k})\n" for k in range(20))
    if storm:
        return (
            f"    def test_{n}(db):\n>       db.query()\n\ntests/test_m{n % 50}.py:{n}: \n"
            f"{frames}    def query(self):\n>       raise ConnectionRefusedError(\n"
            f"E       ConnectionRefusedError: [Errno 111] Connection refused: "
            f"could not connect to 127.0.0.1:{40000 + n}\n\ntests/conftest.py:41: "
            "ConnectionRefusedError"
        )
    return (
        f"    def test_{n}():\n{frames}>       assert value == {n}\n"
        f"E       AssertionError: assert {n + 1} == {n}\n\n"
        f"tests/test_m{n % 50}.py:{n}: AssertionError"
    )


def _failed(n: int, failing: int, given: bool) -> AttemptResult:
    storm = n < failing * 9 // 10
    text = _longrepr(n, storm)
    message = text.splitlines()[-3][8:] if storm else f"AssertionError: assert {n + 1} == {n}"
    sig = Signature("x", "y", "") if given else None
    return AttemptResult(1, AttemptOutcome.FAILED, 0.1, "call", message, text, signature=sig)


def _report(tests: int, failing: int) -> RunReport:
    results = []
    for n in range(tests):
        passed = AttemptResult(2 if n < failing else 1, AttemptOutcome.PASSED, 0.01)
        attempts = [_failed(n, failing, False), passed] if n < failing else [passed]
        outcome = Outcome.FLAKY if n < failing else Outcome.PASSED
        results.append(TestResult(f"tests/test_m{n % 50}.py::test_{n}", "", n, outcome, attempts))
    return RunReport(
        command=["python", "-m", "pytest"],
        rootdir="/r",
        tests=results,
        attempts=[Attempt(1, ["python", "-m", "pytest"], "the full command")],
        order=[t.id for t in results],
        exit_code=0,
        started_at="2026-01-01T00:00:00+00:00",
        finished_at="2026-01-01T00:01:00+00:00",
        duration=60.0,
        version="0.1.0",
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tests", type=int, default=10_000)
    parser.add_argument("--failing", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    build_with, build_without, writes, grouping = [], [], [], []
    report = _report(args.tests, args.failing)
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.repeat):
            for given in (False, True):  # interleaved: computed, then given
                start = time.perf_counter()
                for n in range(args.failing):
                    _failed(n, args.failing, given)
                (build_without if given else build_with).append(time.perf_counter() - start)
            start = time.perf_counter()
            for _ in range(3):  # report.json, summary.md, report.html each group once
                causes = report.causes
            grouping.append(time.perf_counter() - start)
            start = time.perf_counter()
            write_reports(report, Path(tmp) / "report")
            writes.append(time.perf_counter() - start)
    med = statistics.median
    print(f"run: {args.tests:,} tests, {args.failing:,} failed once; {len(causes)} causes")
    print(
        f"failed attempts built, signature computed: median {med(build_with) * 1000:.1f} ms; "
        f"given: {med(build_without) * 1000:.1f} ms; "
        f"ratio {med(build_with) / med(build_without):.2f}"
    )
    print(
        f"write_reports median {med(writes):.3f} s; of it the causes grouped 3 times "
        f"{med(grouping) * 1000:.1f} ms (share {med(grouping) / med(writes):.2f})"
    )
    load = os.getloadavg()[0]
    print(f"load average {load:.1f} on {os.cpu_count()} cores; python {sys.version.split()[0]}")


if __name__ == "__main__":
    main()
