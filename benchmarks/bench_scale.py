"""``flakewarden run`` at scale: a generated suite of 20,000 tests, 50 of them flaky.

Run:  python benchmarks/bench_scale.py [--sizes 5000,20000] [--flaky 50] [--modules 200]
                                       [--pairs 3] [--workers 0,2] [--warmups 1]

For each size and each worker count (0: plain pytest; 2: ``-n 2``, pytest-xdist), a suite is
generated in a temporary directory: trivial passing tests spread over ``--modules`` modules,
of which ``--flaky`` fail their first run in a session and pass after (a marker file per
test, in a state directory emptied before every run). Pairs alternate the baseline
``python -m pytest --junitxml=...`` (the same ``-n``; it fails the flaky tests, as a first
attempt does) and ``flakewarden run -- python -m pytest``, which reruns the flaky tests in a
fresh process (``--max-failures`` is raised to ``--flaky``: more failures than its default of
10 is taken for a real break, and nothing is rerun). Printed per case, medians over the pairs:

- wall time of both commands, and flakewarden's own time: its wall time less the attempts'
  durations in report.json (each attempt's pytest process, spawn to exit);
- peak memory (maximum resident set): flakewarden's own process, and its largest pytest
  process (the xdist controller or a worker under ``-n``), against the baseline's largest;
- flakewarden's own CPU time (its process, every thread);
- the report files' sizes, and the attempts folder (records and output logs).

The last table compares the largest size with the smallest: each figure's growth against
the growth of the number of tests. Nothing of flakewarden's should grow faster than the
tests do; a fixed cost (the interpreter, imports) makes its figures grow slower.
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
REPORT_FILES = ("report.json", "junit.xml", "report.html", "summary.md", "rerun-report.txt")

#: Runs flakewarden's ``main`` in this process, then writes what ``getrusage`` says of it
#: (its own peak and CPU) and of its children (the largest pytest process's peak).
MEASURED = """\
import json, resource, sys
from flakewarden.cli import main
code = main(sys.argv[2:])
own = resource.getrusage(resource.RUSAGE_SELF)
kids = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(sys.argv[1], "w", encoding="utf-8") as out:
    json.dump({"code": code, "own_kib": own.ru_maxrss, "own_cpu": own.ru_utime + own.ru_stime,
               "child_kib": kids.ru_maxrss}, out)
"""

MODULE_HEAD = """\
import os
from pathlib import Path

STATE = Path(os.environ["BENCH_FLAKY_STATE"])


def _first_run_fails(name):
    marker = STATE / name
    if not marker.exists():
        marker.touch()
        raise AssertionError(f"{name} failed its first run in this session")


"""


class Run(NamedTuple):
    wall: float
    own: float  # flakewarden: wall less the attempts' durations; baseline: 0
    own_cpu: float
    own_kib: int  # flakewarden's own peak resident set (baseline: 0)
    child_kib: int  # the largest pytest process's peak resident set
    sizes: dict[str, int]


def generate(root: Path, tests: int, flaky: int, modules: int) -> None:
    """``tests`` tests over ``modules`` modules; every (tests // flaky)-th fails once."""
    root.mkdir(parents=True)
    (root / "pytest.ini").write_text(PYTEST_INI, encoding="utf-8")
    every = max(1, tests // max(1, flaky))
    number = 0
    for module in range(modules):
        count = tests // modules + (1 if module < tests % modules else 0)
        parts = [MODULE_HEAD]
        for _ in range(count):
            if number % every == every - 1 and number // every < flaky:
                body = f'    _first_run_fails("t{number}")\n'
            else:
                body = f"    assert {number} == {number}\n"
            parts.append(f"def test_{number}():\n{body}\n\n")
            number += 1
        (root / f"test_mod{module:04d}.py").write_text("".join(parts), encoding="utf-8")


def clean_env() -> dict[str, str]:
    """The environment without what would change the run, bytecode caching on (as in CI)."""
    env = {k: v for k, v in os.environ.items() if k not in _LEAKY_ENV}
    for name in ("GITHUB_ACTIONS", "PYTHONDONTWRITEBYTECODE"):
        env.pop(name, None)
    return env


def _fresh_state(state: Path) -> None:
    shutil.rmtree(state, ignore_errors=True)
    state.mkdir()


def _largest_child_kib() -> int:
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss


def run_baseline(suite: Path, work: Path, workers: int, env: dict[str, str]) -> Run:
    """``python -m pytest --junitxml`` (the flaky tests fail, as in a first attempt).

    Its peak is read by a probe process that waits for pytest alone, since this process's
    ``RUSAGE_CHILDREN`` keeps the largest child it has ever waited for.
    """
    _fresh_state(work / "state")
    junit = work / "baseline-junit.xml"
    xdist = ["-n", str(workers)] if workers else []
    probe = (
        "import resource, subprocess, sys; subprocess.run(sys.argv[1:], "
        "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); "
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    started = time.monotonic()
    done = subprocess.run(
        [PYTHON, "-c", probe, PYTHON, "-m", "pytest", "-q", f"--junitxml={junit}", *xdist],
        cwd=suite,
        env=env,
        capture_output=True,
        text=True,
    )
    wall = time.monotonic() - started
    if not junit.is_file():
        raise SystemExit(f"the baseline pytest wrote no JUnit file:\n{done.stderr[-2000:]}")
    return Run(wall, 0.0, 0.0, 0, int(done.stdout.strip() or 0), {"junit.xml": _size(junit)})


def run_flakewarden(
    suite: Path, work: Path, workers: int, env: dict[str, str], tests: int, flaky: int
) -> Run:
    _fresh_state(work / "state")
    report_dir = work / "report"
    shutil.rmtree(report_dir, ignore_errors=True)
    usage = work / "usage.json"
    xdist = ["-n", str(workers)] if workers else []
    # More failed tests than --max-failures (10 by default) is taken for a real break.
    command = ["run", "--report-dir", str(report_dir), "--max-failures", str(flaky)]
    command += ["--", PYTHON, "-m", "pytest", *xdist]
    started = time.monotonic()
    done = subprocess.run(
        [PYTHON, "-c", MEASURED, str(usage), *command],
        cwd=suite,
        env=env,
        capture_output=True,
        text=True,
    )
    wall = time.monotonic() - started
    measured = json.loads(usage.read_text(encoding="utf-8")) if usage.is_file() else {}
    report = json.loads((report_dir / "report.json").read_text(encoding="utf-8"))
    totals = report["totals"]
    if (
        measured.get("code") != 0
        or totals.get("passed") != tests - flaky
        or totals.get("flaky") != flaky
    ):
        raise SystemExit(
            f"flakewarden run did not report {tests - flaky} passed and {flaky} flaky "
            f"(exit {measured.get('code')}, totals {totals}):\n{done.stderr[-2000:]}"
        )
    reported = sum(float(a["duration"]) for a in report["attempts"])
    sizes = {name: _size(report_dir / name) for name in REPORT_FILES}
    sizes["attempts/"] = sum(
        p.stat().st_size for p in (report_dir / "attempts").rglob("*") if p.is_file()
    )
    return Run(
        wall,
        wall - reported,
        float(measured["own_cpu"]),
        int(measured["own_kib"]),
        int(measured["child_kib"]),
        sizes,
    )


def _size(path: Path) -> int:
    return path.stat().st_size if path.is_file() else 0


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


def measure_case(
    root: Path, tests: int, flaky: int, modules: int, workers: int, pairs: int, warmups: int
) -> dict[str, float]:
    """One size and worker count: ``warmups`` untimed pairs, then ``pairs`` timed pairs."""
    suite = root / f"suite-{tests}"
    if not suite.is_dir():
        generate(suite, tests, flaky, min(modules, tests))
    work = root / f"work-{tests}-{workers}"
    work.mkdir(exist_ok=True)
    env = {**clean_env(), "BENCH_FLAKY_STATE": str(work / "state")}
    for _ in range(warmups):  # bytecode, the page cache
        run_baseline(suite, work, workers, env)
        run_flakewarden(suite, work, workers, env, tests, flaky)
    base: list[Run] = []
    ours: list[Run] = []
    for _ in range(pairs):
        base.append(run_baseline(suite, work, workers, env))
        ours.append(run_flakewarden(suite, work, workers, env, tests, flaky))
    sizes = ours[-1].sizes
    figures = {
        "pytest --junitxml wall s": _median([r.wall for r in base]),
        "flakewarden run wall s": _median([r.wall for r in ours]),
        "flakewarden own time s": _median([r.own for r in ours]),
        "flakewarden own CPU s": _median([r.own_cpu for r in ours]),
        "flakewarden own peak MiB": _median([r.own_kib / 1024 for r in ours]),
        "its largest pytest peak MiB": _median([r.child_kib / 1024 for r in ours]),
        "baseline pytest peak MiB": _median([r.child_kib / 1024 for r in base]),
        "baseline junit.xml KiB": base[-1].sizes["junit.xml"] / 1024,
    }
    figures.update({f"{name} KiB": size / 1024 for name, size in sizes.items()})
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="5000,20000", help="suite sizes, comma-separated")
    parser.add_argument("--flaky", type=int, default=50, help="tests that fail their first run")
    parser.add_argument("--modules", type=int, default=200, help="modules the tests spread over")
    parser.add_argument("--pairs", type=int, default=3, help="baseline/flakewarden pairs")
    parser.add_argument("--workers", default="0,2", help="xdist workers per case (0: none)")
    parser.add_argument("--warmups", type=int, default=1, help="untimed pairs before each case")
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    workers = [int(w) for w in args.workers.split(",")]
    if args.flaky > sizes[0]:
        parser.error("--flaky is larger than the smallest suite")
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"machine: {cpus} CPUs, Python {platform.python_version()}, {platform.system()}")
    print(f"load average before: {os.getloadavg()[0]:.1f}; {args.pairs} pair(s) per case")
    results: dict[tuple[int, int], dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="flakewarden-bench-scale-") as tmp:
        for count in workers:
            for size in sizes:
                figures = measure_case(
                    Path(tmp), size, args.flaky, args.modules, count, args.pairs, args.warmups
                )
                results[size, count] = figures
                label = f"-n {count}" if count else "no xdist"
                print(f"\n{size} tests, {args.flaky} flaky, {label}")
                for name, value in figures.items():
                    print(f"  {name:<30} {value:>10.3f}")
    if len(sizes) > 1:
        small, large = sizes[0], sizes[-1]
        print(f"\ngrowth from {small} to {large} tests (x{large / small:.1f} tests):")
        for count in workers:
            label = f"-n {count}" if count else "no xdist"
            print(f"  {label}")
            for name, value in results[large, count].items():
                before = results[small, count][name]
                growth = f"x{value / before:.2f}" if before else "n/a"
                print(f"    {name:<30} {growth:>8}")
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
