"""Time and peak memory to read a 50,000-testcase JUnit file: flakewarden vs junitparser.

Run:  python benchmarks/bench_junit_read.py [--cases 50000] [--repeat 5]

Every measurement runs in a fresh interpreter, so one reader's memory never shows in the
other's peak RSS. Timing and tracemalloc run in separate processes (tracing slows the
code it traces). Readers alternate within each repetition, and the medians are reported.

Readers:
- ``iter_junit_cases``: flakewarden's streaming reader, consuming every case.
- ``JUnitXml.fromfile``: junitparser's parse into a full tree (the baseline).
- ``fromfile + walk``: the same, then reading each case's name, classname, time and
  result, which is what a caller needs to learn the outcomes.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any, Callable

READERS = ("iter_junit_cases", "fromfile", "fromfile+walk")
BASELINE = "fromfile"
TRACEBACK_LINES = 30


def generate(path: Path, cases: int) -> dict[str, int]:
    """A pytest-like JUnit file: 1 in 50 cases fails with a traceback, 1 in 100 skips."""
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    per_suite = 500
    with open(path, "w", encoding="utf-8") as out:
        out.write('<?xml version="1.0" encoding="utf-8"?>\n<testsuites name="bench">\n')
        for start in range(0, cases, per_suite):
            out.write(f'  <testsuite name="suite{start // per_suite}">\n')
            for i in range(start, min(start + per_suite, cases)):
                module = f"tests.pkg{i % 40}.test_mod{i % 400}"
                head = (
                    f'    <testcase classname="{module}.TestThing" name="test_case_{i}[param-{i}]" '
                    f'file="tests/pkg{i % 40}/test_mod{i % 400}.py" line="{i % 300 + 1}" '
                    f'time="{(i % 997) / 1000:.3f}"'
                )
                if i % 50 == 7:
                    counts["failed"] += 1
                    trace = "\n".join(
                        f"tests/pkg/test_mod.py:{n}: in helper_{n}\n"
                        f"    value = compute({n}) &amp; x"
                        for n in range(TRACEBACK_LINES)
                    )
                    out.write(
                        f'{head}>\n      <failure message="AssertionError: assert {i} == {i + 1}">'
                        f"{trace}\nE   AssertionError: assert {i} == {i + 1}</failure>\n"
                        f"      <system-out>captured output of case {i}</system-out>\n"
                        "    </testcase>\n"
                    )
                elif i % 100 == 3:
                    counts["skipped"] += 1
                    out.write(f'{head}>\n      <skipped message="not on this platform"/>\n')
                    out.write("    </testcase>\n")
                else:
                    counts["passed"] += 1
                    out.write(f"{head}/>\n")
            out.write("  </testsuite>\n")
        out.write("</testsuites>\n")
    return counts


# --- child process: one reader, one measurement ---------------------------------------------


def _read_flakewarden(path: Path) -> dict[str, int]:
    from flakewarden.reports.junit_read import iter_junit_cases

    counts: dict[str, int] = {}
    for case in iter_junit_cases(path):
        counts[case.outcome.value] = counts.get(case.outcome.value, 0) + 1
    return counts


def _read_fromfile(path: Path) -> dict[str, int]:
    from junitparser import JUnitXml

    xml = JUnitXml.fromfile(str(path))
    return {"suites": len(xml)}


def _read_fromfile_walk(path: Path) -> dict[str, int]:
    from junitparser import Failure, JUnitXml, Skipped

    counts = {"passed": 0, "failed": 0, "skipped": 0}
    for suite in JUnitXml.fromfile(str(path)):
        for case in suite:
            _ = (case.name, case.classname, case.time)
            results = case.result
            if any(isinstance(r, Failure) for r in results):
                counts["failed"] += 1
            elif any(isinstance(r, Skipped) for r in results):
                counts["skipped"] += 1
            else:
                counts["passed"] += 1
    return counts


CHILD_READERS: dict[str, Callable[[Path], dict[str, int]]] = {
    "iter_junit_cases": _read_flakewarden,
    "fromfile": _read_fromfile,
    "fromfile+walk": _read_fromfile_walk,
}


def child(reader: str, path: Path, mode: str) -> None:
    src = Path(__file__).resolve().parents[1] / "src"
    sys.path.insert(0, str(src))
    import junitparser  # noqa: F401 - imported before measuring, as both readers need it

    import flakewarden.reports.junit_read  # noqa: F401

    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if reader == "none":
        counts: dict[str, int] = {}
        seconds = 0.0
        peak = 0
    elif mode == "trace":
        tracemalloc.start()
        counts = CHILD_READERS[reader](path)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        seconds = 0.0
    else:
        started = time.perf_counter()
        counts = CHILD_READERS[reader](path)
        seconds = time.perf_counter() - started
        peak = 0
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        json.dumps(
            {
                "seconds": seconds,
                "maxrss_kib": rss_after,
                "rss_before_kib": rss_before,
                "tracemalloc_peak": peak,
                "counts": counts,
            }
        )
    )


def run_child(reader: str, path: Path, mode: str) -> dict[str, Any]:
    completed = subprocess.run(
        [sys.executable, __file__, "--child", reader, "--mode", mode, str(path)],
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, Any] = json.loads(completed.stdout)
    return result


# --- parent: generate, measure, report ------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--child", choices=(*READERS, "none"), help=argparse.SUPPRESS)
    parser.add_argument("--mode", choices=("time", "trace"), default="time", help=argparse.SUPPRESS)
    parser.add_argument("file", nargs="?", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.file, args.mode)
        return

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "junit-50k.xml"
        expected = generate(path, args.cases)
        size = path.stat().st_size
        print(
            f"JUnit file: {args.cases:,} testcases ({expected['failed']:,} failed with "
            f"{TRACEBACK_LINES * 2}-line tracebacks, {expected['skipped']:,} skipped), "
            f"{size / 2**20:.1f} MiB"
        )
        print(f"python {sys.version.split()[0]} on {sys.platform}, {args.repeat} repetitions\n")
        interpreter = [run_child("none", path, "time")["maxrss_kib"] for _ in range(3)]
        floor = statistics.median(interpreter)

        runs: dict[str, list[dict[str, Any]]] = {r: [] for r in READERS}
        traces: dict[str, list[int]] = {r: [] for r in READERS}
        for _ in range(args.repeat):
            for reader in READERS:
                measured = run_child(reader, path, "time")
                if reader != "fromfile" and measured["counts"] != expected:
                    got = measured["counts"]
                    raise SystemExit(f"{reader} read {got}, expected {expected}")
                runs[reader].append(measured)
                traces[reader].append(run_child(reader, path, "trace")["tracemalloc_peak"])

        base_seconds = statistics.median(m["seconds"] for m in runs[BASELINE])
        base_rss = statistics.median(m["maxrss_kib"] for m in runs[BASELINE]) - floor
        header = (
            f"{'reader':<18} {'time s':>8} {'min-max s':>13} {'x base':>7} {'peak RSS MiB':>13} "
            f"{'over interp.':>13} {'x base':>7} {'tracemalloc MiB':>16}"
        )
        print(header)
        print("-" * len(header))
        for reader in READERS:
            all_seconds = [m["seconds"] for m in runs[reader]]
            seconds = statistics.median(all_seconds)
            spread = f"{min(all_seconds):.3f}-{max(all_seconds):.3f}"
            rss = statistics.median(m["maxrss_kib"] for m in runs[reader])
            traced = statistics.median(traces[reader])
            print(
                f"{reader:<18} {seconds:>8.3f} {spread:>13} {seconds / base_seconds:>7.2f} "
                f"{rss / 1024:>13.1f} {(rss - floor) / 1024:>13.1f} "
                f"{(rss - floor) / base_rss:>7.3f} {traced / 2**20:>16.2f}"
            )
        print(
            f"\nmedians of {args.repeat}; 'over interp.' subtracts the peak RSS of an "
            f"interpreter that only imported both libraries ({floor / 1024:.1f} MiB); "
            f"'x base' is relative to junitparser's {BASELINE}."
        )


if __name__ == "__main__":
    main()
