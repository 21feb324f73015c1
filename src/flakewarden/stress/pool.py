"""Running many short pytest processes at once, optionally next to CPU burners.

``process.run_child`` runs one blocking child; a stress run needs several at a
time and must stop all of them (and the burners) on Ctrl-C, SIGTERM or a hung
test. Each child gets its own process group, as in ``process.py``, so a test
that spawns helpers is stopped whole.

Children and burners alike stay in flakewarden's session, each in a process
group of its own. Linux's autogroup scheduler (``sched_autogroup_enabled``, on
by default on desktop and Ubuntu kernels) shares the CPU between sessions: a
burner or a test in a session of its own would get a share apart, and the
burners would barely slow the test they are meant to load.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Optional

from flakewarden.runner.process import Interrupted, new_group, spawn, stop_group

POLL_SECONDS = 0.02
# Spins one core until its parent is gone: a stress run that is killed outright
# (SIGKILL, an OOM kill, a CI timeout) must not leave burners behind.
BURNER_CODE = (
    "# flakewarden burner\n"
    "import os, sys\n"
    "parent = int(sys.argv[1])\n"
    "while os.getppid() == parent:\n"
    "    for _ in range(100_000):\n"
    "        pass\n"
)


@dataclasses.dataclass
class ChildSpec:
    command: list[str]
    cwd: Path
    env: dict[str, str]
    log: Path
    timeout: float


@dataclasses.dataclass
class ChildOutcome:
    exit_code: Optional[int]  # None: killed after its timeout
    duration: float

    @property
    def timed_out(self) -> bool:
        return self.exit_code is None


@contextlib.contextmanager
def _signals_raise() -> Iterator[list[int]]:
    """Record SIGINT/SIGTERM instead of dying, so children are stopped before we raise."""
    received: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return

    def handler(signum: int, frame: object) -> None:
        received.append(signum)

    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield received
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


def _spawn(
    command: Sequence[str], cwd: Path, env: Mapping[str, str], log: Path
) -> subprocess.Popen[bytes]:
    with open(log, "wb") as stream:
        return spawn(command, cwd=cwd, env=env, stdout=stream, session=False)


@contextlib.contextmanager
def burners(count: int) -> Iterator[None]:
    """``count`` processes spinning on a CPU each, for as long as the block runs."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", BURNER_CODE, str(os.getpid())],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            **new_group(),
        )
        for _ in range(count)
    ]
    try:
        yield
    finally:
        for proc in procs:
            stop_group(proc.pid, signal.SIGKILL)
        for proc in procs:
            proc.wait()


def run_all(specs: Sequence[ChildSpec], parallel: int) -> list[ChildOutcome]:
    """Run every spec, at most ``parallel`` at a time; results in the specs' order."""
    outcomes: list[Optional[ChildOutcome]] = [None] * len(specs)
    running: dict[int, tuple[subprocess.Popen[bytes], float]] = {}
    pending = list(range(len(specs)))
    with _signals_raise() as received:
        try:
            while pending or running:
                if received:
                    raise Interrupted(received[0])
                while pending and len(running) < max(1, parallel):
                    index = pending.pop(0)
                    spec = specs[index]
                    running[index] = (
                        _spawn(spec.command, spec.cwd, spec.env, spec.log),
                        time.monotonic(),
                    )
                for index, (proc, started) in list(running.items()):
                    code = proc.poll()
                    elapsed = time.monotonic() - started
                    if code is None and elapsed > specs[index].timeout:
                        stop_group(proc.pid, signal.SIGKILL)
                        proc.wait()
                        outcomes[index] = ChildOutcome(None, elapsed)
                        del running[index]
                    elif code is not None:
                        stop_group(proc.pid, signal.SIGKILL)  # whatever it left behind in its group
                        outcomes[index] = ChildOutcome(code, elapsed)
                        del running[index]
                time.sleep(POLL_SECONDS)
        finally:
            for proc, _ in running.values():
                stop_group(proc.pid, signal.SIGKILL)
                proc.wait()
    return [o for o in outcomes if o is not None]
