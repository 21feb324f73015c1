"""Overhead of ``flakewarden run`` over plain pytest on a green suite.

Run:  python benchmarks/bench_run_overhead.py [--tests 2000] [--modules 40] [--pairs 7]

A green suite of trivial tests is generated in a temporary directory (pytest-randomly and
the cache provider are switched off in its ``pytest.ini``). Each pair times, as whole
subprocesses, the baseline ``python -m pytest`` then ``flakewarden run -- python -m pytest``;
pairs alternate so a noisy neighbour slows both sides alike. One warm-up of each runs first
and is not counted. The table shows medians, the ratio of the medians and the median of the
per-pair ratios; for flakewarden it also splits the wall time into the pytest child (as
flakewarden timed it in ``report.json``) and everything around it (start-up, reports). The
CPU line sums user and system time of each side's whole process tree, which a busy machine
disturbs far less than the wall clock.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

PYTHON = sys.executable
_LEAKY_ENV = ("PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER", "PYTEST_XDIST_TESTRUNUID", "COVERAGE_FILE")
PYTEST_INI = "[pytest]\naddopts = -p no:randomly -p no:cacheprovider\n"


class Timing(NamedTuple):
    wall: float
    child: float  # the pytest child's own time, as flakewarden measured it (0 for baseline)
    cpu: float  # user + system CPU seconds of the whole process tree: steadier on a busy machine


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def generate(root: Path, tests: int, modules: int, work_ms: float = 0.0) -> None:
    """``tests`` passing tests spread evenly over ``modules`` modules.

    With ``work_ms``, each test busy-waits that long, like a test that does real work.
    """
    root.mkdir(parents=True, exist_ok=True)
    (root / "pytest.ini").write_text(PYTEST_INI, encoding="utf-8")
    modules = max(1, min(modules, tests))
    work = (
        f"    end = time.perf_counter() + {work_ms / 1000!r}\n"
        "    while time.perf_counter() < end:\n        pass\n"
        if work_ms
        else ""
    )
    for module in range(modules):
        count = tests // modules + (1 if module < tests % modules else 0)
        body = "import time\n\n\n" + "".join(
            f"def test_{i}():\n{work}    assert {i} == {i}\n\n\n" for i in range(count)
        )
        (root / f"test_mod{module:03d}.py").write_text(body, encoding="utf-8")


def clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _LEAKY_ENV}
    env.pop("GITHUB_ACTIONS", None)
    return env


def run_baseline(root: Path, env: dict[str, str], tests: int) -> Timing:
    cpu, started = _children_cpu(), time.perf_counter()
    done = subprocess.run(
        [PYTHON, "-m", "pytest"], cwd=root, env=env, capture_output=True, text=True
    )
    wall, cpu = time.perf_counter() - started, _children_cpu() - cpu
    if done.returncode != 0 or f"{tests} passed" not in done.stdout:
        raise SystemExit(f"baseline pytest did not pass {tests} tests:\n{done.stdout[-2000:]}")
    return Timing(wall, 0.0, cpu)


def run_flakewarden(root: Path, env: dict[str, str], report_dir: Path, tests: int) -> Timing:
    command = [PYTHON, "-m", "flakewarden", "run", "--report-dir", str(report_dir), "--"]
    cpu, started = _children_cpu(), time.perf_counter()
    done = subprocess.run(
        [*command, PYTHON, "-m", "pytest"], cwd=root, env=env, capture_output=True, text=True
    )
    wall, cpu = time.perf_counter() - started, _children_cpu() - cpu
    report = json.loads((report_dir / "report.json").read_text(encoding="utf-8"))
    if done.returncode != 0 or report["totals"].get("passed") != tests:
        raise SystemExit(
            f"flakewarden run did not pass {tests} tests (exit {done.returncode}):\n"
            f"{done.stdout[-2000:]}{done.stderr[-2000:]}"
        )
    child = sum(float(a["duration"]) for a in report["attempts"])
    return Timing(wall, child, cpu)


def machine() -> str:
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{cpus} CPUs, Python {platform.python_version()}, {platform.system()}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=2000, help="tests in the suite")
    parser.add_argument("--modules", type=int, default=40, help="modules they spread over")
    parser.add_argument("--pairs", type=int, default=7, help="baseline/candidate pairs timed")
    parser.add_argument(
        "--work-ms", type=float, default=0.0, help="busy work in each test, in milliseconds"
    )
    options = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="flakewarden-bench-overhead-"))
    try:
        root = work / "suite"
        generate(root, options.tests, options.modules, options.work_ms)
        report_dir = work / "report"
        env = clean_env()
        each = f", {options.work_ms:g} ms of work each" if options.work_ms else ""
        print(f"suite: {options.tests} passing tests{each} in {options.modules} modules ({root})")
        print(f"machine: {machine()}")
        run_baseline(root, env, options.tests)  # warm-up: disk cache, .pyc files
        run_flakewarden(root, env, report_dir, options.tests)
        baseline: list[Timing] = []
        candidate: list[Timing] = []
        for pair in range(1, options.pairs + 1):
            baseline.append(run_baseline(root, env, options.tests))
            candidate.append(run_flakewarden(root, env, report_dir, options.tests))
            print(
                f"  pair {pair}: pytest {baseline[-1].wall:.3f}s  "
                f"flakewarden {candidate[-1].wall:.3f}s",
                flush=True,
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)

    base = statistics.median(t.wall for t in baseline)
    cand = statistics.median(t.wall for t in candidate)
    child = statistics.median(t.child for t in candidate)
    around = statistics.median(t.wall - t.child for t in candidate)
    pair_ratio = statistics.median(c.wall / b.wall for b, c in zip(baseline, candidate))
    base_cpu = statistics.median(t.cpu for t in baseline)
    cand_cpu = statistics.median(t.cpu for t in candidate)
    rows = [
        ("python -m pytest (baseline)", f"{base:.3f}", f"{min(t.wall for t in baseline):.3f}"),
        (
            "flakewarden run -- python -m pytest",
            f"{cand:.3f}",
            f"{min(t.wall for t in candidate):.3f}",
        ),
        ("  of which the pytest child", f"{child:.3f}", ""),
        ("  of which flakewarden around it", f"{around:.3f}", ""),
    ]
    width = max(len(r[0]) for r in rows)
    print()
    print(f"{'command':<{width}}  {'median s':>9}  {'min s':>7}")
    for name, median, least in rows:
        print(f"{name:<{width}}  {median:>9}  {least:>7}")
    print()
    print(
        f"ratio flakewarden/pytest: {cand / base:.3f} (medians), {pair_ratio:.3f} "
        f"(median of {options.pairs} pair ratios); overhead {100 * (cand / base - 1):+.1f}%"
    )
    print(
        f"CPU (user+system, whole process tree): pytest {base_cpu:.3f}s, flakewarden "
        f"{cand_cpu:.3f}s (medians); overhead {100 * (cand_cpu / base_cpu - 1):+.1f}%"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
