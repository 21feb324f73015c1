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

A ``ForkServer`` (``forkserver.py``) can stand in for spawning: its children
take the same layout (a group of their own in our session) and are stopped
the same way, by their group.
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
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Protocol

from flakewarden.runner.fork_process import HASH_SEED, draw_hash_seed, fixed_hash_seed
from flakewarden.runner.forkserver import ForkServerLost
from flakewarden.runner.process import Interrupted, new_group, spawn, stop_group

if TYPE_CHECKING:
    from flakewarden.runner.forkserver import ForkServer

POLL_SECONDS = 0.02
RESULTS_VARIABLE = "FLAKEWARDEN_RESULTS"  # the plugin's records file, set by ``plugin_env``
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
    hash_seed: Optional[int] = None  # the child's PYTHONHASHSEED (None: its own draw, unknown)

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


class Throttle(Protocol):
    """Told of every child as it starts and as it ends (its pid leads its process group).

    ``results`` is the child's records file, where the plugin marks the start of
    the test: what is throttled is the test, not pytest's start-up.
    """

    def add(self, pid: int, results: Optional[Path] = None) -> None: ...

    def discard(self, pid: int) -> None: ...


class _Running(Protocol):
    """A spawned ``Popen`` or a ``Forked`` child."""

    @property
    def pid(self) -> int: ...

    def poll(self) -> Optional[int]: ...

    def wait(self) -> Optional[int]: ...


def _start(
    spec: ChildSpec, server: Optional[ForkServer], stop: Callable[[], None]
) -> tuple[_Running, Optional[int]]:
    """The child, and its hash seed: a spawned one's is drawn here unless its env fixes one."""
    if server is not None:
        args = server.args_for(spec.command, spec.env)
        if args is not None:
            forked = server.start(args, spec.cwd, spec.env, spec.log, stop=stop)
            if forked is not None:
                return forked, forked.hash_seed
    env = spec.env
    hash_seed = fixed_hash_seed(env)
    if hash_seed is None:
        hash_seed = draw_hash_seed()
        env = {**env, HASH_SEED: str(hash_seed)}
    return _spawn(spec.command, spec.cwd, env, spec.log), hash_seed


def _start_over(spec: ChildSpec) -> None:
    """A run whose server died runs again: what it wrote is unlinked (new files, not truncated)."""
    for path in (spec.log, spec.env.get(RESULTS_VARIABLE)):
        if path:
            with contextlib.suppress(OSError):
                os.unlink(path)


def run_all(
    specs: Sequence[ChildSpec],
    parallel: int,
    *,
    server: Optional[ForkServer] = None,
    throttle: Optional[Throttle] = None,
) -> list[ChildOutcome]:
    """Run every spec, at most ``parallel`` at a time; results in the specs' order.

    With a ``server``, each spec it can run is forked from it instead of spawned
    (see ``forkserver``); the rest, and every spec once the server is unusable,
    are spawned. A forked run whose server died is killed and spawned anew.
    ``throttle`` is told each child's pid as it starts and as it ends.
    """
    outcomes: list[Optional[ChildOutcome]] = [None] * len(specs)
    running: dict[int, tuple[_Running, float]] = {}
    hash_seeds: dict[int, Optional[int]] = {}
    pending = list(range(len(specs)))
    with _signals_raise() as received:

        def stop() -> None:
            if received:
                raise Interrupted(received[0])

        def end(index: int, child: _Running) -> None:
            del running[index]
            if throttle is not None:
                throttle.discard(child.pid)

        try:
            while pending or running:
                stop()
                while pending and len(running) < max(1, parallel):
                    index = pending.pop(0)
                    spec = specs[index]
                    child, hash_seeds[index] = _start(spec, server, stop)
                    running[index] = (child, time.monotonic())
                    if throttle is not None:
                        records = spec.env.get(RESULTS_VARIABLE)
                        throttle.add(child.pid, Path(records) if records else None)
                for index, (child, started) in list(running.items()):
                    try:
                        code = child.poll()
                    except ForkServerLost:
                        stop_group(child.pid, signal.SIGKILL)
                        end(index, child)
                        _start_over(specs[index])
                        pending.insert(0, index)
                        continue
                    elapsed = time.monotonic() - started
                    if code is None and elapsed > specs[index].timeout:
                        stop_group(child.pid, signal.SIGKILL)
                        child.wait()
                        end(index, child)
                        outcomes[index] = ChildOutcome(None, elapsed, hash_seeds.get(index))
                    elif code is not None:
                        end(index, child)
                        # Whatever it left behind in its group goes too.
                        stop_group(child.pid, signal.SIGKILL)
                        outcomes[index] = ChildOutcome(code, elapsed, hash_seeds.get(index))
                if server is not None and server.usable:
                    server.wait(POLL_SECONDS)
                else:
                    time.sleep(POLL_SECONDS)
        finally:
            for child, _ in running.values():
                stop_group(child.pid, signal.SIGKILL)
            for child, _ in running.values():
                child.wait()
                if throttle is not None:
                    throttle.discard(child.pid)
    return [o for o in outcomes if o is not None]
