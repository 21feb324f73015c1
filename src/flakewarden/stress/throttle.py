"""Slowing a test process by a known factor on any machine: stop it for most of every period.

CPU burners slow a test by whatever share of the cores the scheduler leaves it:
on a fast many-core machine that may be almost nothing. A duty cycle does not
depend on the machine: every process group registered here is sent SIGSTOP for
``1 - run_share`` of each period and SIGCONT for the rest, so its CPU-bound
work takes ``1 / run_share`` times as long in wall-clock time, and a deadline
the test measures with a clock is missed as it would be on a machine that
much slower. Every thread of the process stops together, so the knob slows
the test against the clock; the burners, which preempt threads one at a time,
remain the knob that perturbs interleavings.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Optional

from flakewarden.outside_json import Refused, open_confined, read_bounded
from flakewarden.runner.process import stop_group

DEFAULT_PERIOD = 0.02
MIN_PERIOD = 0.004


def period_for(test_seconds: float) -> float:
    """A period no longer than the test, so that even a short test straddles stops."""
    return min(DEFAULT_PERIOD, max(MIN_PERIOD, test_seconds))


class DutyThrottle:
    """Stops the registered process groups for ``1 - run_share`` of every ``period``."""

    def __init__(self, run_share: float, period: float = DEFAULT_PERIOD) -> None:
        if not 0 < run_share <= 1:
            raise ValueError("run_share must be in (0, 1]")
        self.run_share = run_share
        self.period = period
        self._groups: set[int] = set()
        self._waiting: dict[int, Path] = {}  # groups not stopped until the test starts
        self._watched: dict[int, Path] = {}  # throttled until their session ends
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._thread = threading.Thread(
            target=self._cycle, name="flakewarden-throttle", daemon=True
        )
        self.cycles = 0

    @property
    def slowdown(self) -> float:
        """The factor CPU-bound work is slowed by, by construction."""
        return 1 / self.run_share

    def describe(self) -> str:
        on = self.period * self.run_share
        return (
            f"the test's process group runs {1000 * on:.1f} ms of every "
            f"{1000 * self.period:.0f} ms (SIGSTOP/SIGCONT): CPU work takes {self.slowdown:g}x "
            "as long by the clock"
        )

    def add(self, pid: int, results: Optional[Path] = None) -> None:
        """Throttle ``pid``'s group; with ``results``, only once the test has started.

        pytest's own start-up and collection are not what the knob is about, and
        slowed 16x they would cost a stress run most of its budget: the plugin
        writes a ``start`` record into ``results`` right before the test's setup.
        """
        with self._lock:
            if results is None:
                self._groups.add(pid)
            else:
                self._waiting[pid] = results

    def discard(self, pid: int) -> None:
        # Under the lock, so that no stop from the cycle can land after this continue.
        with self._lock:
            self._groups.discard(pid)
            self._waiting.pop(pid, None)
            self._watched.pop(pid, None)
            stop_group(pid, signal.SIGCONT)

    def _admit(self) -> None:
        """Throttle the groups whose test started; release those whose session ended.

        pytest's session end and the interpreter's exit, slowed as much as the
        test, would cost the arm seconds a process and tell nothing about it.
        """
        with self._lock:
            waiting = list(self._waiting.items())
            watched = list(self._watched.items())
        for pid, results in waiting:
            if _holds(results, _START):
                with self._lock:
                    if self._waiting.pop(pid, None) is not None:
                        self._groups.add(pid)
                        self._watched[pid] = results
        for pid, results in watched:
            if _holds(results, _SESSION):
                with self._lock:
                    if self._watched.pop(pid, None) is not None:
                        self._groups.discard(pid)
                        stop_group(pid, signal.SIGCONT)

    def _signal_all(self, signum: int) -> None:
        with self._lock:
            for pid in self._groups:
                stop_group(pid, signum)

    def _cycle(self) -> None:
        on = self.period * self.run_share
        off = self.period - on
        while not self._done.is_set():
            if self._done.wait(on):
                break
            self._admit()
            self._signal_all(signal.SIGSTOP)
            self._done.wait(off)
            self._signal_all(signal.SIGCONT)
            self.cycles += 1

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._done.set()
        if self._thread.is_alive():
            self._thread.join()
        self._signal_all(signal.SIGCONT)


_START = b'"kind": "start"'
_SESSION = b'"kind": "session"'


def _holds(results: Path, record: bytes) -> bool:
    """Whether the first 4 MiB of the records hold ``record``; never waits on a FIFO."""
    try:
        handle = open_confined(results)
    except (OSError, Refused):
        return False
    try:
        return record in read_bounded(handle, results, 1 << 22)
    except Refused:
        return False
    finally:
        os.close(handle)


@contextlib.contextmanager
def throttled(run_share: float, period: float = DEFAULT_PERIOD) -> Iterator[DutyThrottle]:
    """A running ``DutyThrottle``; every group it holds is continued when the block ends."""
    throttle = DutyThrottle(run_share, period)
    if not hasattr(os, "killpg"):  # pragma: no cover - POSIX only
        yield throttle
        return
    throttle.start()
    try:
        yield throttle
    finally:
        throttle.stop()
