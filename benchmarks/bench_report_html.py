"""``report.html`` for a 10,000-test run with 50 flaky tests: its size, and how soon it works.

1. A ``RunReport`` of ``--tests`` tests (default 10,000) in 200 modules, ``--flaky`` of
   them flaky (default 50: a failed first attempt with a 60-line traceback and captured
   output, then a pass) and ``--failed`` failing every attempt (default 5), built in memory.
2. ``render_report_html`` (what ``write_reports`` adds for the page), ``--repeat`` times:
   median wall time; and the page's size (the target is under 5 MB).
3. In headless Chromium (Debian's, through Playwright), ``--loads`` fresh pages opened
   from ``file://``: the time from navigation start to the first table render
   (``performance.now()`` when the first rows are in the DOM) and to the load event, then
   the time a typed filter takes to redraw the table (keystroke to rows, measured in the
   page). The target: interactive in under 1 s. Medians.

    python benchmarks/bench_report_html.py             # --tests 10000 --flaky 50 by default
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
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "src"))

from flakewarden.model import (  # noqa: E402
    Attempt,
    AttemptOutcome,
    AttemptResult,
    Outcome,
    RunReport,
    TestResult,
)
from flakewarden.reports.html.report_page import render_report_html  # noqa: E402

TRACEBACK = "\n".join(
    f"    frame line {n}: value = compute(x={n}, y={n * 2})  # in tests/helpers.py"
    for n in range(58)
)


def build(tests: int, flaky: int, failed: int) -> RunReport:
    results = []
    step = max(1, tests // max(1, flaky))
    for n in range(tests):
        test_id = (
            f"tests/pkg{n % 20}/test_mod{n // 50:04d}.py::TestCase::test_case_{n:05d}[p{n % 7}]"
        )
        file = test_id.split("::")[0]
        if n % step == step // 2 and flaky:
            flaky -= 1
            message = f"AssertionError: expected 200, got 503 from /api/{n}"
            attempts = [
                AttemptResult(
                    1,
                    AttemptOutcome.FAILED,
                    0.4,
                    "call",
                    message,
                    f"{TRACEBACK}\nE       {message}\n\n{file}:40: AssertionError",
                    stdout="connecting...\n" * 40,
                    stderr="WARNING retry\n" * 10,
                ),
                AttemptResult(2, AttemptOutcome.PASSED, 0.3),
            ]
            outcome = Outcome.FLAKY
        elif n % 1999 == 7 and failed:
            failed -= 1
            attempts = [
                AttemptResult(k, AttemptOutcome.FAILED, 0.2, "call", "KeyError: 'x'", TRACEBACK)
                for k in (1, 2, 3)
            ]
            outcome = Outcome.FAILED
        else:
            attempts = [AttemptResult(1, AttemptOutcome.PASSED, 0.001 + (n % 97) / 1000)]
            outcome = Outcome.PASSED
        results.append(TestResult(test_id, file, 10 + n % 300, outcome, attempts))
    command = ["python", "-m", "pytest", "-n", "2"]
    return RunReport(
        command=command,
        rootdir="/home/runner/work/repo",
        tests=results,
        attempts=[
            Attempt(1, command, "the full command", 1, 300.0, directory="attempts/1"),
            Attempt(2, command, "rerun of failed tests", 1, 20.0, directory="attempts/2"),
            Attempt(3, command, "rerun of failed tests", 1, 10.0, directory="attempts/3"),
        ],
        order=[t.id for t in results],
        exit_code=1,
        started_at="2026-01-01T00:00:00+00:00",
        finished_at="2026-01-01T00:05:30+00:00",
        duration=330.0,
        version="0.1.0",
    )


def in_browser(page: Path, loads: int, needle: str) -> tuple[list[float], list[float], list[float]]:
    from helpers.browser import launch, why_no_browser

    if why_no_browser():
        print(f"no browser timing: {why_no_browser()}")
        return [], [], []
    first, loaded, filtered = [], [], []
    browsers = launch()
    browser = next(browsers)
    try:
        for _ in range(loads):
            opened = browser.open(page)
            p = opened.page
            first.append(float(p.evaluate("document.documentElement.dataset.firstTableRender")))
            loaded.append(
                float(p.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd"))
            )
            # A keystroke in the filter until the table holds only the matching rows.
            took = p.evaluate(
                """(needle) => new Promise((done) => {
                  const input = document.getElementById('filter');
                  const body = document.getElementById('rows');
                  const t0 = performance.now();
                  new MutationObserver((_, obs) => {
                    if (body.rows.length && body.rows.length < 100) {
                      obs.disconnect(); done(performance.now() - t0);
                    }
                  }).observe(body, {childList: true});
                  input.value = needle;
                  input.dispatchEvent(new Event('input'));
                })""",
                needle,
            )
            filtered.append(float(took))
            assert opened.requests == [opened.url] and not opened.errors, opened.errors
            p.close()
    finally:
        browsers.close()
    return first, loaded, filtered


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tests", type=int, default=10_000)
    parser.add_argument("--flaky", type=int, default=50)
    parser.add_argument("--failed", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--loads", type=int, default=5)
    args = parser.parse_args()
    report = build(args.tests, args.flaky, args.failed)
    totals = report.totals
    renders = []
    page_text = ""
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        page_text = render_report_html(report)
        renders.append(time.perf_counter() - t0)
    size = len(page_text.encode("utf-8"))
    print(
        f"run: {totals.tests:,} tests, {totals.flaky} flaky, {totals.failed} failed; "
        f"python {sys.version.split()[0]}"
    )
    print(
        f"render_report_html median s: {statistics.median(renders):.3f} "
        f"(min {min(renders):.3f}, {args.repeat} runs)"
    )
    print(f"report.html: {size / 1e6:.2f} MB; target 5 MB: ratio {size / 5e6:.2f}")
    with tempfile.TemporaryDirectory(prefix="bench-report-html-") as tmp:
        page = Path(tmp) / "report.html"
        page.write_text(page_text, encoding="utf-8")
        needle = f"test_case_{args.tests // 2:05d}"  # one test's id: the table shrinks to it
        first, loaded, filtered = in_browser(page, args.loads, needle)
    if first:
        median = statistics.median(first)
        print(
            f"first table render median ms: {median:.0f} (min {min(first):.0f}, max "
            f"{max(first):.0f}); load event median ms: {statistics.median(loaded):.0f}; "
            f"{args.loads} fresh pages; target 1000 ms: ratio {median / 1000:.2f}"
        )
        print(
            f"filter keystroke to redrawn rows median ms: {statistics.median(filtered):.0f} "
            f"(min {min(filtered):.0f}, max {max(filtered):.0f})"
        )
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
