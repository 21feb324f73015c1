"""How much stress's CPU burners load the test, by where they run: own sessions or the test's.

Linux's autogroup scheduler (``/proc/sys/kernel/sched_autogroup_enabled`` = 1 on
stock Ubuntu) shares the CPU between sessions. flakewarden stress used to start
each burner and each test process in a session of its own; now both stay in
flakewarden's session, each in a process group of its own. Three arms, interleaved
round by round so drift in the machine's load hits all alike:

- ``none``: the test process alone (``pool.run_all``);
- ``own-sessions``: the old layout, burners and test each ``start_new_session``;
- ``shared-session``: the current layout, ``pool.burners`` around ``pool.run_all``.

Two workloads: ``loop``, a child spinning 0.2 s of CPU and printing its wall / CPU
time ratio (the slowdown the burners cause), and runium 0.1.8's
``test_start_in`` (a 10 ms deadline margin) run ``--count=10`` per process under
plain pytest, counting failures.

    python benchmarks/realworld/stress_burners.py [--rounds 10] [--burners 4]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Callable

import sdist

from flakewarden.stress.pool import BURNER_CODE, ChildSpec, burners, run_all

LOOP = """
import time
wall, cpu = time.perf_counter(), time.process_time()
while time.process_time() - cpu < 0.2:
    sum(range(200))
print((time.perf_counter() - wall) / (time.process_time() - cpu))
"""
RUNIUM_TEST = "tests/test_runium.py::test_start_in"
RUNIUM_TOOLS = ["pytest==9.2.0", "pytest-repeat==0.9.4"]
COUNT = 10


@contextmanager
def own_session_burners(count: int) -> Iterator[None]:
    """The layout before: every burner in a session of its own."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", BURNER_CODE, str(os.getpid())], start_new_session=True
        )
        for _ in range(count)
    ]
    try:
        yield
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def run_own_session(command: list[str], cwd: Path, log: Path) -> None:
    """The layout before: the test process in a session of its own."""
    with open(log, "wb") as stream:
        subprocess.run(
            command, cwd=cwd, stdout=stream, stderr=subprocess.STDOUT, start_new_session=True
        )


def run_pool(command: list[str], cwd: Path, log: Path) -> None:
    run_all([ChildSpec(command, cwd, dict(os.environ), log, 600)], 1)


def measure(arm: str, command: list[str], cwd: Path, log: Path, count: int) -> str:
    """Run ``command`` once in ``arm``'s layout; its output."""
    if arm == "none":
        run_pool(command, cwd, log)
    elif arm == "own-sessions":
        with own_session_burners(count):
            run_own_session(command, cwd, log)
    else:
        with burners(count):
            run_pool(command, cwd, log)
    return log.read_text(encoding="utf-8", errors="replace")


def failures(output: str) -> tuple[int, int]:
    """Failed and all runs among a process's repeats after its first (a pool's cold start)."""
    found = re.findall(rf"^(PASSED|FAILED) {re.escape(RUNIUM_TEST)}\[(\d+)-\d+\]", output, re.M)
    later = [outcome for outcome, index in found if index != "1"]
    return sum(o == "FAILED" for o in later), len(later)


ARMS = ["none", "own-sessions", "shared-session"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--burners", type=int, default=2 * (os.cpu_count() or 1))
    parser.add_argument("--work", type=Path, default=Path("/tmp/flakewarden-stress-burners"))
    parser.add_argument("--skip-runium", action="store_true")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    autogroup = Path("/proc/sys/kernel/sched_autogroup_enabled")
    print(
        f"sched_autogroup_enabled = {autogroup.read_text().strip() if autogroup.exists() else '-'}"
        f", {os.cpu_count()} cores, {args.burners} burners, {args.rounds} rounds"
    )
    workloads: dict[str, tuple[list[str], Path, Callable[[str], tuple[float, int]]]] = {
        "loop": ([sys.executable, "-c", LOOP], args.work, lambda out: (float(out.split()[-1]), 1))
    }
    if not args.skip_runium:
        root = sdist.fetch("runium", "0.1.8", args.work)
        python = sdist.make_venv(args.work / "venv-runium-0.1.8", RUNIUM_TOOLS)
        command = [
            str(python),
            *("-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", "-p", "repeat"),
            f"--count={COUNT}",
            RUNIUM_TEST,
        ]
        workloads["runium"] = (command, root, lambda out: failures(out))
    figures: dict[tuple[str, str], list[tuple[float, int]]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        log = Path(scratch) / "out.log"
        for round_number in range(args.rounds):
            shift = round_number % len(ARMS)
            for arm in ARMS[shift:] + ARMS[:shift]:
                for name, (command, cwd, read) in workloads.items():
                    out = measure(arm, command, cwd, log, args.burners)
                    figures.setdefault((name, arm), []).append(read(out))
    print(f"\n{'workload':10} {'arm':16} result")
    for (name, arm), values in sorted(
        figures.items(), key=lambda kv: (kv[0][0], ARMS.index(kv[0][1]))
    ):
        if name == "loop":
            ratios = [v for v, _ in values]
            text = (
                f"wall/CPU median {statistics.median(ratios):.2f} "
                f"(min {min(ratios):.2f}, max {max(ratios):.2f})"
            )
        else:
            bad = sum(int(v) for v, _ in values)
            runs = sum(n for _, n in values)
            text = f"{bad}/{runs} repeats after the first failed"
        print(f"{name:10} {arm:16} {text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
