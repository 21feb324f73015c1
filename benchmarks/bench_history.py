"""The flake history at scale: ingest, database size, a full-window read, GitHub ingest.

1. ``--tests`` x ``--runs`` reports (default 10,000 x 1,000) ingested into a fresh SQLite
   file through ``HistoryStore.ingest``, one transaction per run. The reports are built in
   memory first (not timed): each run is the same suite with a seeded handful of flaky and
   failing tests, as a real suite's history looks.
2. The database's size on disk once closed (the WAL folded back in).
3. Reading every test's entries over the last ``--window`` runs (default 50, what
   ``history show`` reads) and over every run.
4. ``history ingest --from-github`` of ``--github-runs`` runs (default 1,000) from the
   GitHub emulator on loopback (each run with one zipped report of ``--github-tests``
   tests), then a second, incremental ingest: wall time and request counts.

    python benchmarks/bench_history.py            # full size
    python benchmarks/bench_history.py --tests 200 --runs 20 --github-runs 10   # a smoke run
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import platform
import random
import sqlite3
import sys
import tempfile
import time
import types
from pathlib import Path
from typing import Optional

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "src"))

from flakewarden.history.store import HistoryStore  # noqa: E402
from flakewarden.model import (  # noqa: E402
    Attempt,
    AttemptOutcome,
    AttemptResult,
    Outcome,
    RunContext,
    RunReport,
    TestResult,
)


def _test(test_id: str, outcome: Outcome, letters: str, duration: float) -> TestResult:
    kinds = {"p": AttemptOutcome.PASSED, "f": AttemptOutcome.FAILED, "s": AttemptOutcome.SKIPPED}
    attempts = [
        AttemptResult(attempt=n + 1, outcome=kinds[letter], duration=duration)
        for n, letter in enumerate(letters)
    ]
    return TestResult(
        id=test_id, file=test_id.split("::")[0], line=1, outcome=outcome, attempts=attempts
    )


def build_reports(tests: int, runs: int, seed: int = 11) -> list[RunReport]:
    """``runs`` reports of one suite of ``tests`` tests: 1% skipped, a few flaky, a few broken."""
    rng = random.Random(seed)
    ids = [
        f"tests/test_mod{n // 50:04d}.py::test_case_{n:05d}[param-{n % 7}]" for n in range(tests)
    ]
    base = [
        _test(i, Outcome.SKIPPED, "s", 0.0)
        if n % 100 == 99
        else _test(i, Outcome.PASSED, "p", rng.uniform(0.001, 0.5))
        for n, i in enumerate(ids)
    ]
    flaky_pool = rng.sample(range(tests), max(1, tests // 100))  # 1% of tests can flake
    broken_pool = rng.sample(range(tests), max(1, tests // 1000))
    start = 1_700_000_000
    reports = []
    for r in range(runs):
        suite = list(base)
        for n in flaky_pool:
            if rng.random() < 0.05:
                suite[n] = _test(ids[n], Outcome.FLAKY, "fp", 0.3)
        for n in broken_pool:
            if rng.random() < 0.3:
                suite[n] = _test(ids[n], Outcome.FAILED, "fff", 0.2)
        started = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(start + r * 3600))
        context = RunContext(
            repository="octo-org/octo-repo",
            workflow="CI",
            run_id=100_000 + r,
            run_attempt=1,
            job="tests",
            event="push",
            branch="main",
            commit=f"{r:040x}",
            started_at=started,
            os="Linux",
            python="3.12.4",
            flakewarden_version="0.1.0",
        )
        reports.append(
            RunReport(
                command=["python", "-m", "pytest"],
                rootdir="/home/runner/work/repo",
                tests=suite,
                attempts=[Attempt(number=1, command=["python", "-m", "pytest"], reason="first")],
                order=[],
                exit_code=0,
                started_at=started,
                finished_at=started,
                duration=60.0,
                version="0.1.0",
                context=context,
            )
        )
    return reports


def bench_store(args: argparse.Namespace, where: Path) -> None:
    t0 = time.perf_counter()
    reports = build_reports(args.tests, args.runs)
    built = time.perf_counter() - t0
    db = where / "history.db"
    t0, c0 = time.perf_counter(), time.process_time()
    with HistoryStore.open(db) as store:
        if args.journal != "wal":
            store._db.execute(f"PRAGMA journal_mode = {args.journal}")
        for report in reports:
            store.ingest(report, "bench")
        counts = store.counts()
    ingest, cpu = time.perf_counter() - t0, time.process_time() - c0
    size = db.stat().st_size
    leftovers = [p.name for p in where.iterdir() if p.name != "history.db"]
    print(f"reports built in memory (not timed in ingest): {built:.1f} s")
    print(
        f"ingest: {args.runs:,} runs x {args.tests:,} tests = {counts[2]:,} entries in "
        f"{ingest:.1f} s ({counts[2] / ingest:,.0f} entries/s, "
        f"{ingest / args.runs * 1000:.1f} ms/run; {cpu:.1f} s of CPU), journal {args.journal}"
    )
    print(
        f"database: {size / 1e6:.1f} MB ({size / max(1, counts[2]):.1f} bytes/entry); "
        f"other files left: {leftovers}"
    )
    del reports
    with HistoryStore.open(db) as store:
        for label, limit in ((f"last {args.window} runs", args.window), ("every run", None)):
            t0, c0 = time.perf_counter(), time.process_time()
            runs = store.runs(branch="main", pull_requests=False, limit=limit)
            entries = 0
            failures = 0
            for entry in store.entries([r.run_key for r in runs]):
                entries += 1
                failures += entry.first_attempt_failed
            took, cpu = time.perf_counter() - t0, time.process_time() - c0
            print(
                f"read {label}: {len(runs):,} runs, {entries:,} entries "
                f"({failures:,} first-attempt failures) in {took:.2f} s ({cpu:.2f} s of CPU)"
            )
    time_history_show(db, args.window)


def time_history_show(db: Path, window: int, repeat: int = 3) -> None:
    """``history show --json`` over the last ``window`` runs, in a fresh interpreter each time
    (see bench_history_show.py for the scoring alone); wall and CPU time, the best of a few."""
    import resource
    import subprocess

    command = [sys.executable, "-m", "flakewarden", "history", "show", "--db", str(db)]
    command += ["--json", "--window-runs", str(window), "--branch", "main"]
    best = (float("inf"), float("inf"))
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        done = subprocess.run(
            command, capture_output=True, env={**os.environ, "PYTHONPATH": str(REPO / "src")}
        )
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        if done.returncode != 0:
            raise SystemExit(f"history show failed: {done.stderr.decode(errors='replace')}")
        best = min(best, (wall, cpu))
    print(
        f"history show --json, last {window} runs: {best[0]:.2f} s wall, {best[1]:.2f} s CPU "
        f"(fresh interpreter, best of {repeat}; load average {os.getloadavg()[0]:.1f})"
    )


def bench_github(args: argparse.Namespace, where: Path) -> None:
    from helpers.github_emulator import GitHubEmulator
    from helpers.github_emulator_actions import zip_directory

    from flakewarden.commands.history_github import ingest_from_github
    from flakewarden.github.api import GitHubClient
    from flakewarden.reports.report_json import report_json, write_text_atomic

    [report] = build_reports(args.github_tests, 1, seed=5)
    with GitHubEmulator(validate=args.validate) as emu:
        for r in range(args.github_runs):
            run = emu.add_workflow_run(created_at=1_700_000_000 + r * 60)
            report.context = RunContext(
                repository=emu.full_name,
                workflow="CI",
                run_id=run["id"],
                run_attempt=1,
                job="tests",
                event="push",
                branch="main",
                started_at=f"2024-01-01T00:00:{r % 60:02d}+00:00 #{r}",
            )
            directory = where / "gh" / str(r)
            write_text_atomic(directory / "report.json", report_json(report.to_json()))
            emu.add_artifact(run["id"], "flakewarden-tests-0-attempt-1", zip_directory(directory))
        db = where / "github.db"
        options = types.SimpleNamespace(
            repository=emu.full_name,
            token=None,
            workflow="ci.yml",
            branch="",
            event="",
            artifact_prefix="flakewarden-",
            max_runs=100_000,
        )
        for label in ("first ingest", "second ingest"):
            before = len(emu.log)
            client = GitHubClient(emu.token, api_url=emu.url, max_pages=10_000)
            sink = io.StringIO()
            t0 = time.perf_counter()
            with HistoryStore.open(db) as store, contextlib.redirect_stderr(sink):
                done = ingest_from_github(store, options, lambda _: None, sink.write, client=client)
            took = time.perf_counter() - t0
            print(
                f"github {label}: {done.runs:,} runs, {done.ingested:,} ingested in {took:.1f} s; "
                f"{done.api_requests + done.downloads:,} requests "
                f"({done.api_requests:,} to the API, {done.downloads:,} downloads); "
                f"the emulator logged {len(emu.log) - before:,} API requests"
            )
        assert emu.leaked_authorization == []


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=1_000)
    parser.add_argument("--window", type=int, default=50)
    parser.add_argument("--journal", choices=("wal", "delete"), default="wal")
    parser.add_argument("--github-runs", type=int, default=1_000)
    parser.add_argument("--github-tests", type=int, default=200)
    parser.add_argument(
        "--validate", action="store_true", help="check every emulator answer's schema"
    )
    args = parser.parse_args(argv)
    print(
        f"python {platform.python_version()} on {sys.platform}, {os.cpu_count()} CPUs, "
        f"sqlite {sqlite3.sqlite_version}, load average {os.getloadavg()[0]:.1f}"
    )
    with tempfile.TemporaryDirectory(prefix="bench-history-") as temp:
        where = Path(temp)
        (where / "store").mkdir()
        bench_store(args, where / "store")
        if args.github_runs:
            bench_github(args, where)
    return 0


if __name__ == "__main__":
    sys.exit(main())
