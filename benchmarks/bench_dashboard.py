"""Build the flake dashboard from a history of 10,000 tests x 1,000 runs; open it in Chromium.

1. A history database of ``--tests`` x ``--runs`` (default 10,000 x 1,000: ten million
   entries) ingested through ``HistoryStore.ingest``, runs an hour apart on main. Each run
   is the same suite with a seeded handful of flaky tests (1% of tests may flake, 5% of
   the time; a third of those fail with one shared cause, a refused connection whose port
   changes every run) and broken ones, each failure with its traceback, so the history
   holds the failures the groups are made of. Built once (timed apart: not the target).
2. ``flakewarden dashboard --db ... --out ...`` as a whole subprocess (interpreter
   start-up included), ``--repeat`` times: wall and CPU time, medians. The target is
   under 30 s.
3. The page's size, and (when a Chromium is found) the time to its first table render in
   headless Chromium (``performance.now()`` at the first render, from navigation start),
   median of ``--loads`` fresh pages.

    python benchmarks/bench_dashboard.py                     # full size
    python benchmarks/bench_dashboard.py --tests 500 --runs 40 --repeat 1   # a smoke run
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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


def _failed(number: int, message: str, frame: str) -> AttemptResult:
    text = (
        "    def test_it():\n        prepare()\n>       check()\n\n"
        f"{frame}: \n_ _ _ _ _ _ _ _\n\n    def check():\n>       raise Boom()\n"
        f"E       {message}\n\n{frame}: {message.split(':')[0]}"
    )
    return AttemptResult(number, AttemptOutcome.FAILED, 0.3, "call", message, text)


def _passed(number: int, duration: float) -> AttemptResult:
    return AttemptResult(number, AttemptOutcome.PASSED, duration)


def build(path: Path, tests: int, runs: int, seed: int = 13) -> float:
    """The database; the seconds its ingest took."""
    rng = random.Random(seed)
    ids = [f"tests/pkg{n % 40}/test_mod{n // 50:04d}.py::test_case_{n:05d}" for n in range(tests)]
    base = [
        TestResult(i, i.split("::")[0], 1, Outcome.PASSED, [_passed(1, rng.uniform(0.001, 0.5))])
        for i in ids
    ]
    flaky_pool = rng.sample(range(tests), max(1, tests // 100))
    shared = set(flaky_pool[: len(flaky_pool) // 3])
    broken_pool = rng.sample(range(tests), max(1, tests // 1000))
    command = ["python", "-m", "pytest"]
    took = 0.0
    with HistoryStore.open(path) as store:
        for r in range(runs):
            suite = list(base)
            for n in flaky_pool:
                if rng.random() < 0.05:
                    file = ids[n].split("::")[0]
                    if n in shared:
                        message = (
                            "ConnectionRefusedError: [Errno 111] Connection refused to "
                            f"127.0.0.1:{5000 + r}"
                        )
                        first = _failed(1, message, "tests/conftest.py:40")
                    else:
                        first = _failed(1, f"AssertionError: assert {r % 7} == 3", f"{file}:12")
                    suite[n] = TestResult(ids[n], file, 1, Outcome.FLAKY, [first, _passed(2, 0.3)])
            for n in broken_pool:
                if rng.random() < 0.3:
                    file = ids[n].split("::")[0]
                    attempts = [_failed(k, "KeyError: 'user-42'", f"{file}:20") for k in (1, 2, 3)]
                    suite[n] = TestResult(ids[n], file, 1, Outcome.FAILED, attempts)
            started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(1_780_000_000 + r * 3600))
            context = RunContext(
                repository="octo-org/octo-repo",
                workflow="CI",
                run_id=200_000 + r,
                run_attempt=1,
                job="tests",
                event="push",
                branch="main",
                commit=f"{r:040x}",
                started_at=started,
            )
            report = RunReport(
                command=command,
                rootdir="/home/runner/work/repo",
                tests=suite,
                attempts=[Attempt(number=1, command=command, reason="first")],
                order=[],
                exit_code=1,
                started_at=started,
                finished_at=started,
                duration=60.0,
                version="0.1.0",
                context=context,
            )
            t0 = time.perf_counter()
            store.ingest(report, "bench")
            took += time.perf_counter() - t0
    return took


def time_dashboard(db: Path, out: Path, repeat: int) -> tuple[list[float], list[float], str]:
    command = [sys.executable, "-m", "flakewarden", "dashboard", "--db", str(db)]
    command += ["--out", str(out), "--branch", "main"]
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    walls, cpus = [], []
    line = ""
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, env=env)
        walls.append(time.perf_counter() - t0)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        if done.returncode != 0:
            raise SystemExit(f"dashboard failed: {done.stderr}")
        line = done.stdout.strip()
    return walls, cpus, line


def browser_loads(page: Path, loads: int) -> list[float]:
    """ms from navigation start to the first table render, one fresh page per load."""
    from helpers.browser import launch, why_no_browser

    if why_no_browser():
        print(f"no browser timing: {why_no_browser()}")
        return []
    found = []
    browsers = launch()
    browser = next(browsers)
    try:
        for _ in range(loads):
            opened = browser.open(page)
            found.append(
                float(opened.page.evaluate("document.documentElement.dataset.firstTableRender"))
            )
            assert opened.requests == [opened.url] and not opened.errors
            opened.page.close()
    finally:
        browsers.close()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tests", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--loads", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-dashboard-") as tmp:
        db = Path(tmp) / "history.db"
        ingest = build(db, args.tests, args.runs)
        with HistoryStore.open(db) as store:
            runs, tests, entries = store.counts()
            [(kept,)] = store.read("SELECT count(*) FROM failures")
        print(
            f"history: {runs:,} runs x {tests:,} tests = {entries:,} entries, {kept:,} failures "
            f"kept, {db.stat().st_size / 1e6:.1f} MB, ingested in {ingest:.1f} s (not the target)"
        )
        walls, cpus, line = time_dashboard(db, Path(tmp) / "site", args.repeat)
        print(line)
        print(
            f"flakewarden dashboard (whole subprocess) median s: {statistics.median(walls):.2f} "
            f"wall (min {min(walls):.2f}, max {max(walls):.2f}), {statistics.median(cpus):.2f} "
            f"CPU; {args.repeat} runs; target 30 s: ratio {statistics.median(walls) / 30:.2f}"
        )
        page = Path(tmp) / "site" / "index.html"
        print(f"index.html: {page.stat().st_size / 1e6:.2f} MB")
        renders = browser_loads(page, args.loads)
        if renders:
            print(
                f"first table render in Chromium median ms: {statistics.median(renders):.0f} "
                f"(min {min(renders):.0f}, max {max(renders):.0f}, {len(renders)} loads)"
            )
        print(f"python {sys.version.split()[0]}; load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
