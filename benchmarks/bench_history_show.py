"""Time ``flakewarden history show`` over a window of 10,000 tests x 50 runs.

Run:  python benchmarks/bench_history_show.py [--tests 10000] [--runs 50] [--stored 50]
      [--repeat 5]

A history database is built once with ``--stored`` runs on main (``--tests`` tests each;
1 in 50 tests flaky at rates from 2% to 40%, 1 in 500 broken, one run in ten a pull
request), through the store's own ``ingest``. Then, alternating, ``--repeat`` times each:

- ``score_window``: open the database, select the last ``--runs`` runs, read their
  entries and score every test, in this process (the work ``history show`` does);
- ``history show --json``: the command end to end in a fresh interpreter (start-up,
  imports, scoring and the JSON of every test written to a pipe).

Medians of wall and CPU time are reported (CPU time is what a loaded machine does not
inflate); the target is under 1 s for 10,000 tests x 50 runs.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
sys.path.insert(0, str(SRC))

from flakewarden.history.store import HistoryStore  # noqa: E402
from flakewarden.history.window import WindowOptions, score_window  # noqa: E402
from flakewarden.model import (  # noqa: E402
    Attempt,
    AttemptOutcome,
    AttemptResult,
    Outcome,
    RunReport,
    TestResult,
)
from flakewarden.model.history import RunContext  # noqa: E402

START = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
PASS = [AttemptResult(attempt=1, outcome=AttemptOutcome.PASSED, duration=0.01)]
FLAKE = [
    AttemptResult(attempt=1, outcome=AttemptOutcome.FAILED, duration=0.01, message="boom"),
    AttemptResult(attempt=2, outcome=AttemptOutcome.PASSED, duration=0.01),
]
HARD = [
    AttemptResult(attempt=n, outcome=AttemptOutcome.FAILED, duration=0.01, message="boom")
    for n in (1, 2, 3)
]


def build(path: Path, tests: int, stored: int, seed: int = 7) -> float:
    """The database; returns the seconds ingest took."""
    rng = random.Random(seed)
    ids = [f"tests/pkg{i % 40}/test_mod{i % 400}.py::test_case_{i}" for i in range(tests)]
    rates = {i: rng.choice((0.02, 0.05, 0.1, 0.2, 0.4)) for i in range(0, tests, 50)}
    command = ["python", "-m", "pytest"]
    took = 0.0
    with HistoryStore.open(path) as store:
        for n in range(stored):
            pull = n % 10 == 9
            results = []
            for i, test_id in enumerate(ids):
                if i % 500 == 1:
                    attempts, outcome = HARD, Outcome.FAILED
                elif i in rates and rng.random() < rates[i]:
                    attempts, outcome = FLAKE, Outcome.FLAKY
                else:
                    attempts, outcome = PASS, Outcome.PASSED
                results.append(TestResult(test_id, "tests/x.py", 1, outcome, attempts))
            started = (START + dt.timedelta(hours=n)).strftime("%Y-%m-%dT%H:%M:%SZ")
            context = RunContext(
                repository="octo-org/octo-repo",
                workflow="CI",
                run_id=1000 + n,
                run_attempt=1,
                job="test",
                event="pull_request" if pull else "push",
                branch="feature" if pull else "main",
                base_branch="main" if pull else "",
                pr_number=7 if pull else None,
                started_at=started,
            )
            report = RunReport(
                command=command,
                rootdir="/bench",
                tests=results,
                attempts=[Attempt(number=1, command=command, reason="first run")],
                order=ids,
                exit_code=1,
                started_at=started,
                finished_at=started,
                duration=1.0,
                version="0.1.0",
                context=context,
            )
            began = time.perf_counter()
            store.ingest(report, f"bench/{n}")
            took += time.perf_counter() - began
    return took


def time_in_process(path: Path, runs: int) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds, tests scored)."""
    began, cpu = time.perf_counter(), time.process_time()
    store = HistoryStore.open(path)
    try:
        _, scores = score_window(store, WindowOptions(runs=runs), "main", "option", 20)
    finally:
        store.close()
    return time.perf_counter() - began, time.process_time() - cpu, len(scores)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_command(path: Path, runs: int) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of the command in a fresh interpreter."""
    command = [sys.executable, "-m", "flakewarden", "history", "show", "--db", str(path)]
    command += ["--json", "--window-runs", str(runs), "--branch", "main"]
    began, cpu = time.perf_counter(), _children_cpu()
    done = subprocess.run(command, capture_output=True, env={"PYTHONPATH": str(SRC)})
    took = time.perf_counter() - began, _children_cpu() - cpu
    if done.returncode != 0:
        raise SystemExit(f"history show failed: {done.stderr.decode(errors='replace')}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=50, help="the window")
    parser.add_argument("--stored", type=int, default=50, help="runs in the database")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "history.db"
        ingest = build(path, args.tests, max(args.stored, args.runs))
        size = path.stat().st_size / 1e6
        print(
            f"database: {args.tests} tests x {max(args.stored, args.runs)} runs, "
            f"{size:.1f} MB, ingested in {ingest:.1f} s"
        )
        inner: list[tuple[float, float]] = []
        outer: list[tuple[float, float]] = []
        scored = 0
        for _ in range(args.repeat):
            wall, cpu, scored = time_in_process(path, args.runs)
            inner.append((wall, cpu))
            outer.append(time_command(path, args.runs))
        print(f"window: last {args.runs} runs on main; {scored} tests scored")
        for name, times in (("score_window", inner), ("history show --json", outer)):
            walls, cpus = [w for w, _ in times], [c for _, c in times]
            print(
                f"{name} median s: {statistics.median(walls):.3f} wall "
                f"(min {min(walls):.3f}), {statistics.median(cpus):.3f} CPU"
            )
        print(f"load average while measuring: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
