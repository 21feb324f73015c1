"""Rerunning 5 flaky tests out of 2,000: ``flakewarden run`` vs pytest-rerunfailures.

Run:  python benchmarks/bench_reruns_vs_rerunfailures.py [--tests 2000] [--flaky 5] [--pairs 9]
      [--compare-src OTHER/src] [--compare-args=--no-fork-reruns]

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
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple, Optional

import timings_split

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
    split: Optional[dict[str, Any]] = None  # flakewarden only: timings_split.split()


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
    """The environment without what would change the run, nor bytecode switched off.

    A CI job writes ``__pycache__`` (pip compiles at install; pytest caches its rewritten
    test modules); ``PYTHONDONTWRITEBYTECODE`` would make both sides compile every module
    on every run instead.
    """
    env = {k: v for k, v in os.environ.items() if k not in _LEAKY_ENV}
    env.pop("GITHUB_ACTIONS", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def run_rerunfailures(root: Path, env: dict[str, str], flaky: int) -> Timing:
    reset_counters(root)
    command = [PYTHON, "-m", "pytest", "-p", "rerunfailures", "--reruns", "2"]
    started = time.time()
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True)
    wall = time.time() - started
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


def run_flakewarden(
    root: Path,
    env: dict[str, str],
    report_dir: Path,
    flaky: int,
    src: Optional[str] = None,
    args: Sequence[str] = (),
) -> Timing:
    """One ``flakewarden run`` (with ``args``); with ``src``, the flakewarden in that source
    tree (no split)."""
    reset_counters(root)
    command = [PYTHON, "-m", "flakewarden", "run", *args, "--report-dir", str(report_dir), "--"]
    record = report_dir.parent / "timings.json"
    record.unlink(missing_ok=True)
    env = {**env, "FLAKEWARDEN_TIMINGS": str(record)}
    if src:
        env["PYTHONPATH"] = src
    started = time.time()
    done = subprocess.run(
        [*command, PYTHON, "-m", "pytest"], cwd=root, env=env, capture_output=True, text=True
    )
    ended = time.time()
    wall = ended - started
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
    split = None if src or args else timings_split.split(timings_split.read(record), started, ended)
    return Timing(wall, flakes, durations[0], sum(durations[1:]), split)


def machine() -> str:
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{cpus} CPUs, Python {platform.python_version()}, {platform.system()}"


def _row(name: str, values: list[float], flakes: str = "") -> tuple[str, ...]:
    if not values:
        return (name, "", "", "", flakes)
    median, q1, q3 = timings_split.quartiles(values)
    return (name, f"{median:.3f}", f"{q1:.3f}-{q3:.3f}", f"{min(values):.3f}", flakes)


def print_table(baseline: list[Timing], candidate: list[Timing]) -> None:
    splits = [t.split for t in candidate if t.split is not None]
    rows = [
        _row(
            "pytest -p rerunfailures --reruns 2 (baseline)",
            [t.wall for t in baseline],
            str(baseline[-1].flakes),
        ),
        _row(
            "flakewarden run -- python -m pytest",
            [t.wall for t in candidate],
            str(candidate[-1].flakes),
        ),
        _row("  attempt 1 (pytest child)", [t.first for t in candidate]),
        _row("  the rerun (fresh pytest child)", [t.rerun for t in candidate]),
        _row("  flakewarden's own time", [s["own total"] for s in splits]),
    ]
    rows += [_row(f"    {part}", [s["own"][part] for s in splits]) for part in timings_split.OWN]
    cpu = [s["own cpu"] for s in splits]
    rows.append(_row("  flakewarden's own CPU (its process, all threads)", cpu))
    for number, label in ((0, "attempt 1"), (1, "the rerun")):
        parts = [s["child splits"][number] for s in splits if len(s["child splits"]) > number]
        parts = [p for p in parts if p]
        if not parts:
            continue
        items = int(parts[-1]["items"])
        rows.append(_row(f"  {label}, by the plugin's stamps ({items} tests kept)", []))
        rows += [_row(f"    {part}", [p[part] for p in parts]) for part in timings_split.CHILD]
    width = max(len(r[0]) for r in rows)
    print()
    print(f"{'command':<{width}}  {'median s':>9}  {'q1-q3 s':>13}  {'min s':>7}  {'flakes':>6}")
    for name, median, spread, least, flakes in rows:
        print(f"{name:<{width}}  {median:>9}  {spread:>13}  {least:>7}  {flakes:>6}")
    print()
    base = statistics.median(t.wall for t in baseline)
    cand = statistics.median(t.wall for t in candidate)
    ratios = [c.wall / b.wall for b, c in zip(baseline, candidate)]
    ratio, r1, r3 = timings_split.quartiles(ratios)
    shares = [s["own total"] / t.wall for s, t in zip(splits, candidate)]
    share, s1, s3 = timings_split.quartiles(shares)
    print(
        f"ratio flakewarden/rerunfailures: {cand / base:.3f} (medians), {ratio:.3f} (median of "
        f"{len(ratios)} pair ratios, q1-q3 {r1:.3f}-{r3:.3f}, range {min(ratios):.3f}-"
        f"{max(ratios):.3f})"
    )
    print(
        f"flakewarden's own share of its wall time: {100 * share:.1f}% (median, q1-q3 "
        f"{100 * s1:.1f}-{100 * s3:.1f}%)"
    )


def print_comparison(
    baseline: list[Timing], candidate: list[Timing], other: list[Timing], src: str
) -> None:
    """This flakewarden against another tree's, timed in the same pairs, the same way."""
    print()
    print(f"against {src}, in the same pairs (own time here: wall - attempt durations):")
    for name, runs in (("this tree", candidate), ("compared", other)):
        wall, q1, q3 = timings_split.quartiles([t.wall for t in runs])
        own = statistics.median(t.wall - t.first - t.rerun for t in runs)
        ratio = statistics.median(t.wall / b.wall for b, t in zip(baseline, runs))
        print(
            f"  {name}: wall {wall:.3f}s (q1-q3 {q1:.3f}-{q3:.3f}), own {own:.3f}s, "
            f"ratio to rerunfailures {ratio:.3f} (median of pair ratios)"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=2000, help="tests in the suite")
    parser.add_argument("--modules", type=int, default=40, help="modules they spread over")
    parser.add_argument("--flaky", type=int, default=5, help="tests failing their first run")
    parser.add_argument("--pairs", type=int, default=9, help="baseline/candidate pairs timed")
    parser.add_argument(
        "--selection",
        action="store_true",
        help="instead: time a rerun process for each way of passing the selection",
    )
    parser.add_argument(
        "--compare-src",
        metavar="SRC",
        help="also time, in the same pairs, the flakewarden of another source tree's src/",
    )
    parser.add_argument(
        "--compare-args",
        metavar="ARGS",
        help="also time, in the same pairs, this flakewarden with these run options "
        "(e.g. --compare-args=--no-fork-reruns: reruns in new processes)",
    )
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
        print(f"machine: {machine()}, load average {os.getloadavg()[0]:.1f}")
        if options.selection:
            import rerun_selection

            rerun_selection.compare(root, env, flaky, options.pairs, work)
            return 0
        run_rerunfailures(root, env, flaky)  # warm-up: disk cache, .pyc files
        run_flakewarden(root, env, report_dir, flaky)
        baseline: list[Timing] = []
        candidate: list[Timing] = []
        other: list[Timing] = []
        for pair in range(1, options.pairs + 1):
            baseline.append(run_rerunfailures(root, env, flaky))
            candidate.append(run_flakewarden(root, env, report_dir, flaky))
            if options.compare_src or options.compare_args:
                extra = shlex.split(options.compare_args or "")
                other.append(
                    run_flakewarden(root, env, report_dir, flaky, options.compare_src, extra)
                )
            print(
                f"  pair {pair}: rerunfailures {baseline[-1].wall:.3f}s "
                f"({baseline[-1].flakes} rerun)  flakewarden {candidate[-1].wall:.3f}s "
                f"({candidate[-1].flakes} flaky)",
                flush=True,
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print_table(baseline, candidate)
    if other:
        what = " ".join(x for x in (options.compare_src, options.compare_args) if x)
        print_comparison(baseline, candidate, other, what)
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
