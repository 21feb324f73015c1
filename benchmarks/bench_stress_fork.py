"""Stress runs per second of a trivial test: spawned afresh vs forked from the fork server.

Run:  python benchmarks/bench_stress_fork.py [--runs 40] [--pairs 5] [--parallel 1 2]
                                             [--python PATH]

A project holding one passing test is generated in a temporary directory. Each
batch runs the test ``--runs`` times through ``flakewarden.stress.pool.run_all``,
the path every stress phase takes, with the plugin recording each run: spawned
(``python -m pytest`` per run, as before the fork server) or forked (a new
``ForkServer`` per batch, so its start-up, its replacement every 16 forks and
any restart are in the figure). Batches alternate spawn, fork, spawn, ... in
``--pairs`` pairs for each ``--parallel``, so a noisy neighbour slows both alike;
one unmeasured warm-up of each runs first. Every run must exit 0 and record
one passed run of the test. ``--python`` picks the tested interpreter (one
with pytest installed; default: this one). ``PYTHONDONTWRITEBYTECODE`` is
dropped from the runs' environment, as in ``bench_run_overhead.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

from flakewarden.runner.process import plugin_dir, plugin_env
from flakewarden.runner.pytest_args import PytestCommand
from flakewarden.stress.launcher import Launcher
from flakewarden.stress.pool import ChildSpec, run_all

_LEAKY_ENV = ("PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER", "PYTEST_XDIST_TESTRUNUID", "COVERAGE_FILE")
TEST = "test_trivial.py::test_trivial"


def make_project(root: Path) -> None:
    root.mkdir(parents=True)
    (root / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (root / "test_trivial.py").write_text("def test_trivial():\n    assert True\n")


def specs_for(work: Path, project: Path, plugin: Path, python: str, runs: int) -> list[ChildSpec]:
    shutil.rmtree(work / "runs", ignore_errors=True)
    # Bytecode caching on, as in CI (see bench_run_overhead.py): else every run compiles.
    base = {
        k: v for k, v in os.environ.items() if k not in (*_LEAKY_ENV, "PYTHONDONTWRITEBYTECODE")
    }
    command = [python, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", "-q", TEST]
    specs = []
    for number in range(runs):
        directory = work / "runs" / str(number)
        directory.mkdir(parents=True)
        env = plugin_env(plugin, directory / "results.jsonl", base=base)
        specs.append(ChildSpec(command, project, env, directory / "output.log", 120.0))
    return specs


def check(specs: list[ChildSpec], codes: list[Optional[int]]) -> None:
    """Every run exited 0 and recorded one passed run of the test."""
    for spec, code in zip(specs, codes):
        text = Path(spec.env["FLAKEWARDEN_RESULTS"]).read_text(encoding="utf-8")
        tests = [r for r in map(json.loads, text.splitlines()) if r["kind"] == "test"]
        call = [p for p in tests[0]["phases"] if p["when"] == "call"] if len(tests) == 1 else []
        if code != 0 or not call or call[0]["outcome"] != "passed":
            raise SystemExit(f"a run did not pass: exit {code}; see {spec.log}")


def batch(work: Path, project: Path, plugin: Path, python: str, runs: int, parallel: int,
          fork: bool) -> tuple[float, str]:  # fmt: skip
    """Runs per second of one batch, and which mechanism ran it (with any note)."""
    specs = specs_for(work, project, plugin, python, runs)
    with Launcher() as launch:
        started = time.perf_counter()
        server = None
        if fork:
            split = PytestCommand([python, "-m", "pytest"], [])
            server = launch.server_for(split, plugin, project, specs[0].env)
        outcomes = run_all(specs, parallel, server=server)
        launch.close()  # the servers' exit is part of the batch
        elapsed = time.perf_counter() - started
        how = launch.mechanism + (f" ({launch.note})" if launch.note else "")
    check(specs, [o.exit_code for o in outcomes])
    return runs / elapsed, how


def tested_version(python: str) -> str:
    done = subprocess.run(
        [python, "-c", "import sys, pytest; print(sys.version.split()[0], pytest.__version__)"],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip().replace(" ", ", pytest ")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40, help="runs of the test per batch")
    parser.add_argument("--pairs", type=int, default=5, help="spawn/fork pairs per --parallel")
    parser.add_argument("--parallel", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--python", default=sys.executable, help="the tested interpreter")
    options = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="flakewarden-bench-fork-"))
    print(
        f"tested python {tested_version(options.python)} ({options.python}); "
        f"{platform.system().lower()}, {os.cpu_count()} cores, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    print(f"{options.runs} runs of a trivial test per batch, {options.pairs} pairs\n")
    rows = []
    notes: set[str] = set()
    try:
        project = work / "project"
        make_project(project)
        with plugin_dir() as plugin:
            for parallel in options.parallel:
                args = (work, project, plugin, options.python, options.runs, parallel)
                batch(*args, fork=False)  # warm-up: disk cache, .pyc files
                batch(*args, fork=True)
                spawned, forked = [], []
                for pair in range(1, options.pairs + 1):
                    spawned.append(batch(*args, fork=False)[0])
                    rate, how = batch(*args, fork=True)
                    forked.append(rate)
                    notes.add(how)
                    print(
                        f"  parallel {parallel} pair {pair}: spawn {spawned[-1]:.2f} runs/s, "
                        f"fork {forked[-1]:.2f} runs/s",
                        flush=True,
                    )
                rows.append((parallel, spawned, forked))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(
        f"\n{'parallel':>8} {'spawn runs/s':>13} {'fork runs/s':>12} "
        f"{'spawn s/run':>12} {'fork s/run':>11}  pair ratios (median, range)"
    )
    for parallel, spawned, forked in rows:
        spawn_rate, fork_rate = statistics.median(spawned), statistics.median(forked)
        ratios = [f / s for s, f in zip(spawned, forked)]
        print(
            f"{parallel:>8} {spawn_rate:>13.2f} {fork_rate:>12.2f} {1 / spawn_rate:>12.3f} "
            f"{1 / fork_rate:>11.3f}  {statistics.median(ratios):.2f}x "
            f"({min(ratios):.2f}-{max(ratios):.2f})"
        )
    print("(medians of the batches)")
    for parallel, spawned, forked in rows:
        ratio = statistics.median(forked) / statistics.median(spawned)
        print(f"ratio fork/spawn at parallel {parallel}: {ratio:.2f}")
    print("forked batches ran by: " + "; ".join(sorted(notes)))
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
