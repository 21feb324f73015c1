"""Processes a test command leaves behind: ended with its attempt, however they detached.

A test can start a process that leaves the attempt's process group (``setsid``,
a double fork) and outlives flakewarden; it could then write workflow commands
to the job log (through ``/proc/<pid>/fd/1``) after the output fence closed, or
disturb the next attempt. On Linux flakewarden makes itself the *child
subreaper* of everything it starts: an orphan is re-parented to flakewarden,
not to init, so after each attempt every process still parented to
flakewarden is one the attempt left, and is killed. Elsewhere only the
attempt's process group is ended (see ``process.run_child``).

An adopted orphan that exits while the attempt runs is reaped at once
(``ZombieReaper``), as init would: a test that waits for a process it detached to be
gone (``/proc``, ``killpg(group, 0)``) sees it gone under flakewarden too.

flakewarden is a subreaper only while an attempt runs (``adopt_orphans`` ...
``release_orphans``): afterwards an orphan of any other process it starts (the stress
engine's forked runs) goes to init, or to whoever adopts it, and is reaped there,
instead of waiting as a zombie parented to flakewarden that nobody reaps.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading
import time
from collections.abc import Collection, Iterator
from typing import Optional

PR_SET_CHILD_SUBREAPER = 36
#: Rounds of kill-and-reap: each round ends the orphans the last one re-parented.
MAX_ROUNDS = 100
REAP_SECONDS = 5.0
#: How often an attempt's exited orphans are looked for.
REAP_INTERVAL = 0.1

_adopting = False
# The processes flakewarden started itself (``process.spawn``): theirs to wait for.
_own: set[int] = set()
# Our own helpers that outlive attempts (``keep``): not an attempt's leftovers.
_kept: set[int] = set()
# Held while a child is started and named (``starting``), and while leftovers are ended or
# reaped: a fork server started from the thread reading an attempt's records, between its
# start and ``keep``, was once killed as the ending attempt's leftover.
_naming = threading.Lock()


@contextlib.contextmanager
def starting() -> Iterator[None]:
    """Start a child of ours and name it (``own`` or ``keep``) inside this: no leftover is
    ended or reaped meanwhile, so a child not yet named is never taken for one."""
    with _naming:
        yield


def own(pid: int) -> None:
    """``pid`` is a child flakewarden waits for itself: never reaped for it."""
    _own.add(pid)


def keep(pid: int) -> None:
    """``pid`` is a helper of ours that outlives attempts (a fork server): never ended as a
    leftover, never reaped for us; ``release`` once it is gone."""
    _own.add(pid)
    _kept.add(pid)


def release(pid: int) -> None:
    _own.discard(pid)
    _kept.discard(pid)


def adopt_orphans() -> bool:
    """Become the subreaper of our descendants (Linux); False where that is not possible."""
    global _adopting
    if _adopting:
        return True
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        _adopting = libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        _adopting = False
    return _adopting


def release_orphans() -> None:
    """Stop adopting: called once an attempt's orphans are ended (``end_orphans``)."""
    global _adopting
    if not _adopting:
        return
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) == 0:
            _adopting = False


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid``, zombies included, from ``/proc``.

    Each thread's ``children`` file names them at once; where the kernel has no such
    file, every process's ``stat`` is read instead (milliseconds on a busy machine).
    """
    listed = _listed_children(pid)
    if listed is not None:
        return listed
    found = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        fields = _stat_fields(int(entry))  # None: gone meanwhile
        if fields is not None and len(fields) > 1 and int(fields[1]) == pid:
            found.append(int(entry))
    return found


def _stat_fields(pid: int) -> Optional[list[bytes]]:
    """``/proc/PID/stat`` after the command name: state, ppid, pgrp, ...; None if gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stream:
            stat = stream.read()
    except OSError:
        return None
    # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
    return stat[stat.rfind(b")") + 2 :].split()


def _listed_children(pid: int) -> Optional[list[int]]:
    """From ``/proc/PID/task/*/children``; None when the kernel does not provide them."""
    if not os.path.exists(f"/proc/{pid}/task/{pid}/children"):
        return None
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    found: list[int] = []
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children", "rb") as stream:
                found.extend(int(child) for child in stream.read().split())
        except OSError:
            continue  # the thread ended meanwhile
    return found


def end_orphans(exclude: Collection[int] = ()) -> int:
    """Kill and reap every process parented to us but ``exclude``; how many there were."""
    if not _adopting:
        return 0
    me = os.getpid()
    ended = 0
    for _ in range(MAX_ROUNDS):
        with _naming:
            found = [pid for pid in children(me) if pid not in exclude and pid not in _kept]
            for pid in found:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
        if not found:
            break
        for pid in found:
            _reap(pid)
        ended += len(found)
    return ended


def _reap(pid: int) -> None:
    deadline = time.monotonic() + REAP_SECONDS
    while True:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return
        if done or time.monotonic() > deadline:
            return
        time.sleep(0.01)


def reap_exited_orphans(exclude: Collection[int] = ()) -> int:
    """Reap the adopted orphans that have exited; how many.

    Only zombies outside our own process group are taken, and none flakewarden started
    itself: a child it runs in its own group (``git``, ``coverage``) or waits for by pid
    keeps its exit status for whoever waits for it.
    """
    if not _adopting:
        return 0
    with _naming:
        return _reap_exited(exclude)


def _reap_exited(exclude: Collection[int]) -> int:
    me, group = os.getpid(), os.getpgrp()
    reaped = 0
    for pid in children(me):
        if pid in exclude or pid in _own:
            continue
        fields = _stat_fields(pid)
        if fields is None or len(fields) < 3 or fields[0] not in (b"Z", b"X"):
            continue
        if int(fields[2]) == group:
            continue
        with contextlib.suppress(ChildProcessError):
            if os.waitpid(pid, os.WNOHANG)[0]:
                reaped += 1
    return reaped


class ZombieReaper:
    """Reaps exited orphans every ``REAP_INTERVAL`` seconds while an attempt runs."""

    def __init__(self, exclude: Collection[int]) -> None:
        self._exclude = frozenset(exclude)
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="reaper", daemon=True)

    def __enter__(self) -> ZombieReaper:
        if _adopting:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopped.set()
        if self._thread.ident is not None:
            self._thread.join()

    def _run(self) -> None:
        while not self._stopped.wait(REAP_INTERVAL):
            reap_exited_orphans(self._exclude)
