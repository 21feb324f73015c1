"""Overhead of ``flakewarden run`` over plain pytest on a green suite.

Run:  python benchmarks/bench_run_overhead.py [--tests 2000] [--modules 40] [--pairs 9] [--bare]

A green suite of trivial tests is generated in a temporary directory (pytest-randomly and
the cache provider are switched off in its ``pytest.ini``). Each pair times, as whole
subprocesses, the baseline ``python -m pytest --junitxml=...`` (what a user would run instead:
pytest writing its own JUnit file; with ``--bare``, ``python -m pytest`` alone) then
``flakewarden run -- python -m pytest``; pairs
alternate so a noisy neighbour slows both sides alike. One warm-up of each runs first and is
not counted. The table shows medians with their quartiles, the ratio of the medians and the
median of the per-pair ratios. flakewarden's wall time is split by its own timings record
(``FLAKEWARDEN_TIMINGS``, see benchmarks/timings_split.py) into the pytest child (spawn to
exit) and flakewarden's own time, part by part. The CPU line sums user and system time of
each side's whole process tree, which a busy machine disturbs far less than the wall clock.
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
from typing import Any, NamedTuple, Optional

import timings_split

PYTHON = sys.executable
_LEAKY_ENV = ("PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER", "PYTEST_XDIST_TESTRUNUID", "COVERAGE_FILE")
PYTEST_INI = "[pytest]\naddopts = -p no:randomly -p no:cacheprovider\n"


class Timing(NamedTuple):
    wall: float
    child: float  # the pytest child's own time, as flakewarden measured it (0 for baseline)
    cpu: float  # user + system CPU seconds of the whole process tree: steadier on a busy machine
    split: Optional[dict[str, Any]] = None  # flakewarden only: timings_split.split()
    reported: float = 0.0  # flakewarden only: the attempts' durations in report.json


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
    """The environment without what would change the run, nor bytecode switched off.

    A CI job writes ``__pycache__`` (pip compiles at install; pytest caches its rewritten
    test modules); ``PYTHONDONTWRITEBYTECODE`` would make both sides compile every module
    on every run instead.
    """
    env = {k: v for k, v in os.environ.items() if k not in _LEAKY_ENV}
    env.pop("GITHUB_ACTIONS", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def run_baseline(root: Path, env: dict[str, str], tests: int, bare: bool = False) -> Timing:
    """``python -m pytest --junitxml``; ``bare``: without ``--junitxml``."""
    junit = root.parent / "baseline-junit.xml"
    cpu, started = _children_cpu(), time.time()
    done = subprocess.run(
        [PYTHON, "-m", "pytest", *([] if bare else [f"--junitxml={junit}"])],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
    )
    wall, cpu = time.time() - started, _children_cpu() - cpu
    if done.returncode != 0 or f"{tests} passed" not in done.stdout or not (bare or junit.exists()):
        raise SystemExit(f"baseline pytest did not pass {tests} tests:\n{done.stdout[-2000:]}")
    return Timing(wall, 0.0, cpu)


def run_flakewarden(
    root: Path, env: dict[str, str], report_dir: Path, tests: int, src: Optional[str] = None
) -> Timing:
    """One ``flakewarden run``; with ``src``, the flakewarden in that source tree (no split)."""
    command = [PYTHON, "-m", "flakewarden", "run", "--report-dir", str(report_dir), "--"]
    record = report_dir.parent / "timings.json"
    record.unlink(missing_ok=True)
    env = {**env, "FLAKEWARDEN_TIMINGS": str(record)}
    if src:
        env["PYTHONPATH"] = src
    cpu, started = _children_cpu(), time.time()
    done = subprocess.run(
        [*command, PYTHON, "-m", "pytest"], cwd=root, env=env, capture_output=True, text=True
    )
    ended = time.time()
    wall, cpu = ended - started, _children_cpu() - cpu
    report = json.loads((report_dir / "report.json").read_text(encoding="utf-8"))
    if done.returncode != 0 or report["totals"].get("passed") != tests:
        raise SystemExit(
            f"flakewarden run did not pass {tests} tests (exit {done.returncode}):\n"
            f"{done.stdout[-2000:]}{done.stderr[-2000:]}"
        )
    reported = sum(float(a["duration"]) for a in report["attempts"])
    if src:
        return Timing(wall, reported, cpu, None, reported)
    split = timings_split.split(timings_split.read(record), started, ended)
    return Timing(wall, split["children"], cpu, split, reported)


def machine() -> str:
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{cpus} CPUs, Python {platform.python_version()}, {platform.system()}"


def _row(name: str, values: list[float]) -> tuple[str, str, str, str]:
    if not values:
        return (name, "", "", "")
    median, q1, q3 = timings_split.quartiles(values)
    return (name, f"{median:.3f}", f"{q1:.3f}-{q3:.3f}", f"{min(values):.3f}")


def print_table(baseline: list[Timing], candidate: list[Timing], bare: bool = False) -> None:
    splits = [t.split for t in candidate if t.split is not None]
    shown = "python -m pytest" if bare else "python -m pytest --junitxml"
    rows = [
        _row(f"{shown} (baseline)", [t.wall for t in baseline]),
        _row("flakewarden run -- python -m pytest", [t.wall for t in candidate]),
        _row("  the pytest child (spawn to exit)", [t.child for t in candidate]),
        _row("  flakewarden's own time", [s["own total"] for s in splits]),
    ]
    rows += [_row(f"    {part}", [s["own"][part] for s in splits]) for part in timings_split.OWN]
    cpu = [s["own cpu"] for s in splits]
    rows.append(_row("  flakewarden's own CPU (its process, all threads)", cpu))
    parts = [s["child splits"][0] for s in splits if s["child splits"] and s["child splits"][0]]
    if parts:
        rows.append(_row("  the pytest child, by the plugin's stamps", []))
        rows += [_row(f"    {part}", [p[part] for p in parts]) for part in timings_split.CHILD]
    width = max(len(r[0]) for r in rows)
    print()
    print(f"{'command':<{width}}  {'median s':>9}  {'q1-q3 s':>13}  {'min s':>7}")
    for name, median, spread, least in rows:
        print(f"{name:<{width}}  {median:>9}  {spread:>13}  {least:>7}")
    print()
    base = statistics.median(t.wall for t in baseline)
    cand = statistics.median(t.wall for t in candidate)
    ratios = [c.wall / b.wall for b, c in zip(baseline, candidate)]
    ratio, r1, r3 = timings_split.quartiles(ratios)
    base_cpu = statistics.median(t.cpu for t in baseline)
    cand_cpu = statistics.median(t.cpu for t in candidate)
    print(
        f"ratio flakewarden/pytest: {cand / base:.3f} (medians), {ratio:.3f} (median of "
        f"{len(ratios)} pair ratios, q1-q3 {r1:.3f}-{r3:.3f}, range {min(ratios):.3f}-"
        f"{max(ratios):.3f}); overhead {100 * (cand / base - 1):+.1f}%"
    )
    print(
        f"CPU (user+system, whole process tree): pytest {base_cpu:.3f}s, flakewarden "
        f"{cand_cpu:.3f}s (medians); overhead {100 * (cand_cpu / base_cpu - 1):+.1f}%"
    )
    if splits:
        own = statistics.median(s["own total"] for s in splits)
        print(
            f"flakewarden's own time / the baseline's wall time: {100 * own / base:.1f}% "
            f"(medians: {own:.3f}s of {base:.3f}s)"
        )


def print_comparison(
    baseline: list[Timing], candidate: list[Timing], other: list[Timing], src: str
) -> None:
    """This flakewarden against another tree's, timed in the same pairs, the same way."""
    print()
    print(f"against {src}, in the same pairs (own time here: wall - attempt durations):")
    for name, runs in (("this tree", candidate), ("that tree", other)):
        wall, q1, q3 = timings_split.quartiles([t.wall for t in runs])
        ratio = statistics.median(t.wall / b.wall for b, t in zip(baseline, runs))
        cpu = statistics.median(t.cpu for t in runs)
        print(
            f"  {name}: wall {wall:.3f}s (q1-q3 {q1:.3f}-{q3:.3f}), own "
            f"{statistics.median(t.wall - t.reported for t in runs):.3f}s, ratio to pytest "
            f"{ratio:.3f} (median of pair ratios), CPU of the tree {cpu:.3f}s"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=2000, help="tests in the suite")
    parser.add_argument("--modules", type=int, default=40, help="modules they spread over")
    parser.add_argument("--pairs", type=int, default=9, help="baseline/candidate pairs timed")
    parser.add_argument(
        "--work-ms", type=float, default=0.0, help="busy work in each test, in milliseconds"
    )
    parser.add_argument(
        "--compare-src",
        metavar="SRC",
        help="also time, in the same pairs, the flakewarden of another source tree's src/",
    )
    parser.add_argument(
        "--bare", action="store_true", help="the baseline is python -m pytest, no --junitxml"
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
        print(f"machine: {machine()}, load average {os.getloadavg()[0]:.1f}")
        run_baseline(root, env, options.tests, options.bare)  # warm-up: disk cache, .pyc files
        run_flakewarden(root, env, report_dir, options.tests)
        baseline: list[Timing] = []
        candidate: list[Timing] = []
        other: list[Timing] = []
        for pair in range(1, options.pairs + 1):
            baseline.append(run_baseline(root, env, options.tests, options.bare))
            candidate.append(run_flakewarden(root, env, report_dir, options.tests))
            if options.compare_src:
                other.append(
                    run_flakewarden(root, env, report_dir, options.tests, options.compare_src)
                )
            print(
                f"  pair {pair}: pytest {baseline[-1].wall:.3f}s  "
                f"flakewarden {candidate[-1].wall:.3f}s",
                flush=True,
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print_table(baseline, candidate, options.bare)
    if other:
        print_comparison(baseline, candidate, other, options.compare_src)
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
