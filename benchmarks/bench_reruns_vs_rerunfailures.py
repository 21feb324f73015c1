"""Rerunning 5 flaky tests out of 2,000: ``flakewarden run`` vs pytest-rerunfailures.

Run:  python benchmarks/bench_reruns_vs_rerunfailures.py [--tests 2000] [--flaky 5] [--pairs 7]

A suite of trivial passing tests is generated in a temporary directory (pytest-randomly and
the cache provider are switched off in its ``pytest.ini``); ``--flaky`` of them, in
different modules, fail their first run and pass their second, counting runs in one file
per test that is cleared before every timed command. Each pair times, as whole
subprocesses, the baseline ``python -m pytest -p rerunfailures --reruns 2`` (reruns in the
same process) then ``flakewarden run -- python -m pytest`` (reruns the failures together in
one fresh process); pairs alternate so a noisy neighbour slows both sides alike. One
warm-up of each runs first and is not counted.

Every run is checked to have done the same work: rerunfailures' summary line counts
``--flaky`` reruns, flakewarden's report.json holds ``--flaky`` ``flaky`` outcomes, and its
rerun ran in a process other than the first attempt's.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
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
COUNTERS = ".counters"
FLAKY_TEST = """\
def test_flaky_{index}():
    counter = Path(__file__).parent / {counters!r} / "flaky_{index}"
    runs = int(counter.read_text()) if counter.exists() else 0
    counter.write_text(str(runs + 1))
    assert runs >= 1, "fails its first run, passes its second"


"""


class Timing(NamedTuple):
    wall: float
    flakes: int  # the flaky tests the tool reported
    first: float  # flakewarden only: attempt 1's child process, as flakewarden timed it
    rerun: float  # flakewarden only: the rerun attempts' child processes


def generate(root: Path, tests: int, modules: int, flaky: int) -> None:
    """``tests`` tests over ``modules`` modules; the first ``flaky`` modules hold one flake."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "pytest.ini").write_text(PYTEST_INI, encoding="utf-8")
    (root / COUNTERS).mkdir()
    modules = max(1, min(modules, tests))
    for module in range(modules):
        count = tests // modules + (1 if module < tests % modules else 0)
        parts = ["from pathlib import Path\n\n\n"]
        first = 0
        if module < flaky and count:
            parts.append(FLAKY_TEST.format(index=module, counters=COUNTERS))
            first = 1
        parts.extend(f"def test_{i}():\n    assert {i} == {i}\n\n\n" for i in range(first, count))
        (root / f"test_mod{module:03d}.py").write_text("".join(parts), encoding="utf-8")


def reset_counters(root: Path) -> None:
    for counter in (root / COUNTERS).iterdir():
        counter.unlink()


def clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _LEAKY_ENV}
    env.pop("GITHUB_ACTIONS", None)
    return env


def run_rerunfailures(root: Path, env: dict[str, str], flaky: int) -> Timing:
    reset_counters(root)
    command = [PYTHON, "-m", "pytest", "-p", "rerunfailures", "--reruns", "2"]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    found = re.search(r"(\d+) rerun", last)
    flakes = int(found.group(1)) if found else 0
    if done.returncode != 0 or flakes != flaky:
        raise SystemExit(
            f"rerunfailures did not rerun {flaky} tests (exit {done.returncode}): {last}\n"
            f"{done.stdout[-2000:]}"
        )
    return Timing(wall, flakes, 0.0, 0.0)


def _pid(results: Path) -> int:
    with open(results, encoding="utf-8") as stream:
        for line in stream:
            record = json.loads(line)
            if record.get("kind") == "config":
                return int(record["pid"])
    return 0


def run_flakewarden(root: Path, env: dict[str, str], report_dir: Path, flaky: int) -> Timing:
    reset_counters(root)
    command = [PYTHON, "-m", "flakewarden", "run", "--report-dir", str(report_dir), "--"]
    started = time.perf_counter()
    done = subprocess.run(
        [*command, PYTHON, "-m", "pytest"], cwd=root, env=env, capture_output=True, text=True
    )
    wall = time.perf_counter() - started
    report = json.loads((report_dir / "report.json").read_text(encoding="utf-8"))
    flakes = sum(1 for test in report["tests"] if test["outcome"] == "flaky")
    attempts = report["attempts"]
    if done.returncode != 0 or flakes != flaky or (flaky and len(attempts) < 2):
        raise SystemExit(
            f"flakewarden run did not report {flaky} flaky tests (exit {done.returncode}, "
            f"{flakes} flaky, {len(attempts)} attempts):\n{done.stdout[-2000:]}{done.stderr}"
        )
    pids = {_pid(report_dir / a["directory"] / "results.jsonl") for a in attempts}
    if len(pids) != len(attempts):
        raise SystemExit(f"flakewarden's attempts did not run in fresh processes: pids {pids}")
    durations = [float(a["duration"]) for a in attempts]
    return Timing(wall, flakes, durations[0], sum(durations[1:]))


def machine() -> str:
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{cpus} CPUs, Python {platform.python_version()}, {platform.system()}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=2000, help="tests in the suite")
    parser.add_argument("--modules", type=int, default=40, help="modules they spread over")
    parser.add_argument("--flaky", type=int, default=5, help="tests failing their first run")
    parser.add_argument("--pairs", type=int, default=7, help="baseline/candidate pairs timed")
    options = parser.parse_args()
    flaky = min(options.flaky, options.modules, options.tests)

    work = Path(tempfile.mkdtemp(prefix="flakewarden-bench-reruns-"))
    try:
        root = work / "suite"
        generate(root, options.tests, options.modules, flaky)
        report_dir = work / "report"
        env = clean_env()
        print(
            f"suite: {options.tests} tests in {options.modules} modules, "
            f"{flaky} failing their first run ({root})"
        )
        print(f"machine: {machine()}")
        run_rerunfailures(root, env, flaky)  # warm-up: disk cache, .pyc files
        run_flakewarden(root, env, report_dir, flaky)
        baseline: list[Timing] = []
        candidate: list[Timing] = []
        for pair in range(1, options.pairs + 1):
            baseline.append(run_rerunfailures(root, env, flaky))
            candidate.append(run_flakewarden(root, env, report_dir, flaky))
            print(
                f"  pair {pair}: rerunfailures {baseline[-1].wall:.3f}s "
                f"({baseline[-1].flakes} rerun)  flakewarden {candidate[-1].wall:.3f}s "
                f"({candidate[-1].flakes} flaky)",
                flush=True,
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)

    base = statistics.median(t.wall for t in baseline)
    cand = statistics.median(t.wall for t in candidate)
    pair_ratio = statistics.median(c.wall / b.wall for b, c in zip(baseline, candidate))
    rows = [
        (
            "pytest -p rerunfailures --reruns 2 (baseline)",
            f"{base:.3f}",
            f"{min(t.wall for t in baseline):.3f}",
            str(baseline[-1].flakes),
        ),
        (
            "flakewarden run -- python -m pytest",
            f"{cand:.3f}",
            f"{min(t.wall for t in candidate):.3f}",
            str(candidate[-1].flakes),
        ),
        (
            "  of which attempt 1 (pytest child)",
            f"{statistics.median(t.first for t in candidate):.3f}",
            "",
            "",
        ),
        (
            "  of which the rerun (fresh pytest child)",
            f"{statistics.median(t.rerun for t in candidate):.3f}",
            "",
            "",
        ),
        (
            "  of which flakewarden around them",
            f"{statistics.median(t.wall - t.first - t.rerun for t in candidate):.3f}",
            "",
            "",
        ),
    ]
    width = max(len(r[0]) for r in rows)
    print()
    print(f"{'command':<{width}}  {'median s':>9}  {'min s':>7}  {'flakes':>6}")
    for name, median, least, flakes in rows:
        print(f"{name:<{width}}  {median:>9}  {least:>7}  {flakes:>6}")
    print()
    print(
        f"ratio flakewarden/rerunfailures: {cand / base:.3f} (medians), {pair_ratio:.3f} "
        f"(median of {options.pairs} pair ratios)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
