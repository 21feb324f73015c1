"""What the stress knobs ``yield`` and ``asyncio`` and the applicability facts cost a run.

Run:  python benchmarks/bench_plugin_knobs.py [--pairs 10] [--repeat 1000] [--rounds 5]
                                              [--probability 0.001] [--python PATH]
                                              [--tests trivial,loop,threads,steps] [--warmups 1]

A project is generated in a temporary directory with four tests: ``trivial`` (passes),
``loop`` (100,000 iterations of a loop in the project's own module, one thread),
``threads`` (the same 100,000 iterations split over two threads) and ``steps`` (an
``asyncio.run`` of 1,000 ``await asyncio.sleep(0)``). Each arm loads the plugin as stress
does and records into a results file: ``plain`` (no knob), ``facts``
(``FLAKEWARDEN_CONCURRENCY=1``), ``yield`` (``FLAKEWARDEN_YIELD=<n>:<probability>``,
a new seed per run) and ``asyncio`` (``FLAKEWARDEN_ASYNCIO=<n>``).

- **Per run**: one fresh ``python -m pytest`` per test and arm, arms in a shuffled order
  within each of ``--pairs`` rounds, so that a noisy neighbour slows all alike; one
  unmeasured warm-up each. Printed: the median wall time of each arm and the median of its
  differences from ``plain`` in the same round.
- **Set-up**: from pytest importing the plugin to the end of its ``pytest_configure``
  (the plugin's own ``config`` record), in the same runs: what importing and configuring
  a knob's modules costs each run, free of the start-up's noise.
- **Per test**: ``trivial`` repeated ``--repeat`` times in one process
  (``FLAKEWARDEN_REPEAT``), from the first ``start`` record to the last ``test`` record,
  divided by the repeats, arms shuffled in each of ``--rounds`` rounds: what a knob costs
  each test, start-up excluded.

Plugin autoloading is off in the runs (a bare pytest's start-up); ``--python`` picks the
tested interpreter (one with pytest; default: this one), e.g. a 3.12+ one for
``sys.monitoring``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from flakewarden.runner.process import plugin_dir, plugin_env

_LEAKY_ENV = ("PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER", "PYTEST_XDIST_TESTRUNUID", "COVERAGE_FILE")
ARMS = ("plain", "facts", "yield", "asyncio")
TESTS = ("trivial", "loop", "threads", "steps")

WORK = """
def spin(count):
    total = 0
    for number in range(count):
        total += number % 7
    return total
"""

TEST_FILE = """
import asyncio
import threading

from work import spin


def test_trivial():
    pass


def test_loop():
    assert spin(100_000) > 0


def test_threads():
    threads = [threading.Thread(target=spin, args=(50_000,)) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def test_steps():
    async def main():
        for _ in range(1_000):
            await asyncio.sleep(0)

    asyncio.run(main())
"""


def make_project(root: Path) -> None:
    root.mkdir(parents=True)
    (root / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (root / "work.py").write_text(WORK, encoding="utf-8")
    (root / "test_knobs.py").write_text(TEST_FILE, encoding="utf-8")


def arm_env(arm: str, number: int, probability: float) -> dict[str, str]:
    if arm == "facts":
        return {"FLAKEWARDEN_CONCURRENCY": "1"}
    if arm == "yield":
        return {"FLAKEWARDEN_YIELD": f"{number}:{probability}"}
    if arm == "asyncio":
        return {"FLAKEWARDEN_ASYNCIO": str(number)}
    return {}


def run(
    python: str, project: Path, plugin: Path, test: str, extra: dict[str, str]
) -> list[dict[str, Any]]:
    """One pytest process; its records (it must pass)."""
    base = {k: v for k, v in os.environ.items() if k not in _LEAKY_ENV}
    base["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    with tempfile.TemporaryDirectory(prefix="flakewarden-bench-knobs-") as work:
        results = Path(work) / "results.jsonl"
        env = plugin_env(plugin, results, base=base, extra=extra)
        command = [python, "-m", "pytest", "-p", "no:cacheprovider", "-q", test]
        done = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"{test} {extra} exited {done.returncode}:\n{done.stdout}")
        lines = results.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def _stamps(records: list[dict[str, Any]]) -> float:
    """From pytest importing the plugin to the end of its ``pytest_configure``: the set-up."""
    (config,) = [r for r in records if r["kind"] == "config"]
    return float(config["time"]) - float(config["loaded"])


def per_run(
    python: str,
    project: Path,
    plugin: Path,
    pairs: int,
    probability: float,
    tests: list[str],
    warmups: int = 1,
) -> tuple[dict[tuple[str, str], list[float]], dict[str, list[float]]]:
    walls: dict[tuple[str, str], list[float]] = {}
    configure: dict[str, list[float]] = {}
    shuffle = random.Random(0).shuffle
    for number in range(pairs + warmups):
        for test in tests:
            arms = list(ARMS)
            shuffle(arms)
            for arm in arms:
                started = time.perf_counter()
                extra = arm_env(arm, number, probability)
                records = run(python, project, plugin, f"test_knobs.py::test_{test}", extra)
                if number >= warmups:  # the first rounds warm up
                    walls.setdefault((test, arm), []).append(time.perf_counter() - started)
                    configure.setdefault(arm, []).append(_stamps(records))
    return walls, configure


def per_test(
    python: str, project: Path, plugin: Path, rounds: int, repeat: int, probability: float
) -> dict[str, list[float]]:
    seconds: dict[str, list[float]] = {}
    shuffle = random.Random(1).shuffle
    for _ in range(rounds):
        arms = list(ARMS)
        shuffle(arms)
        for arm in arms:
            extra = {**arm_env(arm, 1, probability), "FLAKEWARDEN_REPEAT": str(repeat)}
            records = run(python, project, plugin, "test_knobs.py::test_trivial", extra)
            first = min(float(r["time"]) for r in records if r["kind"] == "start")
            last = max(float(r["time"]) for r in records if r["kind"] == "test")
            seconds.setdefault(arm, []).append((last - first) / repeat)
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=10, help="measured rounds of every arm")
    parser.add_argument("--repeat", type=int, default=1000, help="in-process repeats, per test")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of the per-test arms")
    parser.add_argument("--probability", type=float, default=0.001, help="the yield knob's")
    parser.add_argument("--python", default=sys.executable, help="the tested interpreter")
    parser.add_argument(
        "--tests", default=",".join(TESTS), help="the per-run tests, of " + ", ".join(TESTS)
    )
    parser.add_argument("--warmups", type=int, default=1, help="unmeasured rounds before the pairs")
    options = parser.parse_args()
    tests = [t for t in options.tests.split(",") if t]
    if not tests or set(tests) - set(TESTS):
        parser.error(f"--tests takes some of {', '.join(TESTS)}")
    version = subprocess.run(
        [options.python, "-c", "import sys; print(sys.version.split()[0])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    print(f"python {version} on {platform.system().lower()}, {os.cpu_count()} CPUs")
    with (
        tempfile.TemporaryDirectory(prefix="flakewarden-bench-knobs-") as work,
        plugin_dir() as plugin,
    ):
        project = Path(work) / "proj"
        make_project(project)
        walls, configure = per_run(
            options.python,
            project,
            plugin,
            options.pairs,
            options.probability,
            tests,
            options.warmups,
        )
        costs = per_test(
            options.python, project, plugin, options.rounds, options.repeat, options.probability
        )
    print(f"\nper run: wall median s (median difference from plain, ms), {options.pairs} rounds")
    print(f"{'test':10s}" + "".join(f"{arm:>22s}" for arm in ARMS))
    for test in tests:
        cells = []
        for arm in ARMS:
            wall = statistics.median(walls[(test, arm)])
            delta = statistics.median(
                a - b for a, b in zip(walls[(test, arm)], walls[(test, "plain")])
            )
            cells.append(f"{wall:.3f}" if arm == "plain" else f"{wall:.3f} ({delta * 1000:+.1f})")
        print(f"{test:10s}" + "".join(f"{cell:>22s}" for cell in cells))
    print("\nset-up: plugin imported to configured, median ms (difference from plain)")
    plain_setup = statistics.median(configure["plain"])
    print(
        "  ".join(
            f"{arm} {statistics.median(configure[arm]) * 1000:.2f}"
            + (
                ""
                if arm == "plain"
                else f" ({(statistics.median(configure[arm]) - plain_setup) * 1000:+.2f})"
            )
            for arm in ARMS
        )
    )
    print(
        f"\nper test: trivial repeated {options.repeat} times in one process,"
        f" median us per test of {options.rounds} rounds (difference from plain)"
    )
    plain_test = statistics.median(costs["plain"])
    print(
        "  ".join(
            f"{arm} {statistics.median(costs[arm]) * 1e6:.1f}"
            + (
                ""
                if arm == "plain"
                else f" ({(statistics.median(costs[arm]) - plain_test) * 1e6:+.1f})"
            )
            for arm in ARMS
        )
    )
    print(f"yield probability {options.probability}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
