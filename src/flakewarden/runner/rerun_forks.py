"""Reruns forked from a warm pytest: the fork server (``forkserver``) standing in for spawning.

A rerun in a new process pays the interpreter's start, pytest's and its plugins' imports
and the conftests' imports again. As soon as attempt 1 records its first failure, a fork
server is started in the tested interpreter: it imports pytest, the installed plugins and
the conftest files pytest would import for that test (``conftests_for``), then forks one
child per rerun process, which runs pytest's ``main`` on the rerun's arguments and so
collects and runs only the failed tests, importing the test modules itself. No test has
run in the server; each server forks once, so every rerun attempt has a hash seed of its
own, drawn here (the next server is warmed while the current attempt runs); ``random``
reseeds itself in a forked child. A green run starts no server.

Whatever makes forking unsafe or impossible (turned off, no ``os.fork``, coverage
measured, a command that is not pytest's, a plugin or conftest that starts a thread or
opens a socket as it loads, the server dying) leaves the rerun to a new process, and
``start`` says why (``reason``), which the attempt records.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Callable, Optional

from flakewarden.model import timings
from flakewarden.model.attempts import FORKS_MEASURED, FORKS_OFF
from flakewarden.runner import leftovers, pytest_args
from flakewarden.runner.fork_target import target_for
from flakewarden.runner.process import (
    FORK_SERVER_FILE,
    TERMINATE_GRACE_SECONDS,
    ChildResult,
    Interrupted,
    _install_handlers,
    _restore_handlers,
    plugin_env,
    stop_group,
)

if TYPE_CHECKING:
    from flakewarden.model import TestRecord
    from flakewarden.runner.forkserver import Forked, ForkServer
    from flakewarden.runner.process_results import ProcessResults

    RecordsWatcher = Callable[[ProcessResults, Sequence[TestRecord]], None]

SLICE_SECONDS = 0.05
TAIL_BYTES = 1 << 16


def conftests_for(config: Mapping[str, Any], test_ids: Sequence[str]) -> list[str]:
    """The conftest files pytest would import for these tests, parents first.

    Only under pytest's default ``prepend`` import mode with assertion rewriting, which the
    server imports them as; from the conftest cut-off folder (``--confcutdir``, else the
    ini file's folder or the rootdir) down to each test's folder, as pytest looks.
    """
    imports, cut = config.get("imports"), config.get("conftests")
    if imports != ["prepend", "rewrite"] or not isinstance(cut, str) or not cut:
        return []
    rootdir, top = Path(str(config.get("rootdir") or "")), Path(cut)
    if not rootdir.is_absolute() or not top.is_dir():
        return []
    found: dict[str, None] = {}
    for test_id in test_ids:
        folder = (rootdir / test_id.split("::", 1)[0]).parent
        for directory in reversed([folder, *folder.parents]):
            if directory != top and top not in directory.parents:
                continue
            conftest = directory / "conftest.py"
            if conftest.is_file():
                found[str(conftest)] = None
    return list(found)


class RerunForks:
    """One run's fork servers for its reruns, or the reason there are none.

    ``warm`` (from the thread reading attempt 1's records) starts the first server;
    ``start`` forks a rerun process, or answers None with ``reason`` set.
    """

    def __init__(
        self, command: Sequence[str], cwd: Path, plugin: Path, *, enabled: bool, measure: bool
    ) -> None:
        self.cwd, self.plugin = cwd, plugin
        self.note = ""  # why no rerun of this run is forked, once known
        self.reason = ""  # why the last ``start`` gave None
        self._server: Optional[ForkServer] = None
        self._lock = threading.Lock()
        self._told: set[str] = set()
        located = pytest_args.locate(list(command))
        self.target = None
        if located is not None:
            self.target = target_for(located.prefix, cwd, os.environ)
        if not enabled:
            self.note = FORKS_OFF
        elif not sys.platform.startswith("linux") or not hasattr(os, "fork"):
            self.note = "this platform cannot fork a warm pytest (that needs os.fork on Linux)"
        elif measure:
            self.note = FORKS_MEASURED
        elif self.target is None:
            self.note = (
                "the command does not start pytest as `<python> -m pytest` or a `pytest` "
                "script whose #! line names a python"
            )

    def warm(self, config: Optional[Mapping[str, Any]], test_id: str) -> None:
        """Start the first server now, loading the conftests of ``test_id``, the first failure."""
        with self._lock:
            if self._server is None and not self.note and config is not None:
                self._server = self._new_server(conftests_for(config, [test_id]), config)
                self._server.prepare()

    def watch_first(self, early: Callable[[Sequence[TestRecord]], None]) -> RecordsWatcher:
        """Attempt 1's records as they are read: given to ``early``; the first failure warms
        the first server."""
        warmed: list[bool] = []

        def take(results: ProcessResults, records: Sequence[TestRecord]) -> None:
            early(records)
            if not warmed and not self.note:
                failed = next((r for r in records if r.outcome.is_failure), None)
                if failed is not None:
                    warmed.append(True)
                    self.warm(results.config, failed.id)

        return take

    def watch_rerun(self, last: bool) -> Optional[RecordsWatcher]:
        """A rerun's records as they are read: its first failure warms the next attempt's
        server, unless no attempt follows."""
        if last:
            return None
        warmed: list[bool] = []

        def take(results: ProcessResults, records: Sequence[TestRecord]) -> None:
            if not warmed and any(r.outcome.is_failure for r in records):
                warmed.append(True)
                self.warm_next()

        return take

    def warm_next(self) -> None:
        """A rerun has a failure: warm the server for the next attempt while this one runs."""
        with self._lock:
            if self._server is not None and not self.note:
                self._server.prepare()

    def _new_server(self, conftests: list[str], config: Mapping[str, Any]) -> ForkServer:
        """A server for the reruns (imported here: a green run never needs one)."""
        from flakewarden.runner.fork_process import fixed_hash_seed
        from flakewarden.runner.forkserver import ForkServer

        assert self.target is not None
        env = plugin_env(self.plugin, Path(os.devnull))
        per_server = 0 if fixed_hash_seed(env) is not None else 1
        return ForkServer(
            self.target,
            self.plugin / FORK_SERVER_FILE,
            self.cwd,
            env,
            forks_per_server=per_server,
            conftests=conftests,
            rootdir=str(config.get("rootdir") or ""),
            warm_ahead=False,  # the next server is warmed by ``warm_next``
            hash_seed_in_env=False,  # a new process's environment holds no drawn seed
        )

    def start(
        self, command: Sequence[str], env: Mapping[str, str], log: Path, *, last: bool = False
    ) -> Optional[Forked]:
        """Fork one rerun process; None (``reason`` says why) when it must be a new one.

        ``last``: no rerun follows this one, so no server is warmed for the next.
        """
        self.reason = self.note
        if self.note:
            return None
        with self._lock:
            if self._server is None:
                self._server = self._new_server([], {})
            server = self._server
        if last:
            server.forks_per_server = 0  # not replaced: no server is warmed after it
        args = server.args_for(command, env)
        forked = None if args is None else server.start(args, self.cwd, env, log)
        if forked is None:
            self.reason = _why_not(server, env)
            if not server.usable:
                self.note = server.why
        return forked

    def tell(self, note: str) -> bool:
        """Whether the console should say ``note`` (a new process's reason): once, unless off."""
        if not note or note == FORKS_OFF or note in self._told:
            return False
        self._told.add(note)
        return True

    def close(self) -> None:
        with self._lock:
            if self._server is not None:
                self._server.close()


def _why_not(server: ForkServer, env: Mapping[str, str]) -> str:
    from flakewarden.runner.fork_process import fixed_hash_seed

    if not server.usable:
        return server.why
    wanted = fixed_hash_seed(env)
    if wanted is not None:
        return f"the rerun's environment fixes PYTHONHASHSEED={wanted}, unlike the fork server's"
    return "the rerun's command or environment differs from what the fork server loaded"


def run_forked(
    forked: Forked,
    *,
    log: Path,
    echo: Optional[IO[bytes]] = None,
    timeout: Optional[float] = None,
) -> ChildResult:
    """Wait for a forked rerun as ``process.run_child`` waits for a spawned one.

    Its group is stopped on SIGINT/SIGTERM (``Interrupted`` once it is gone) and after
    ``timeout`` seconds (``timed_out``), and whatever it left running is ended. Its output,
    which it writes to ``log`` itself, is copied to ``echo`` as it grows. Raises
    ``ForkServerLost`` (the child's group killed) when the server died before saying how
    the child ended.
    """
    from flakewarden.runner.forkserver import ForkServerLost

    started = time.monotonic()
    received: list[int] = []
    pid = forked.pid
    leftovers.adopt_orphans()
    with timings.phase("child", log=str(log), forked=True) as timed:
        timed["spawned"] = time.time()
        killer = threading.Timer(TERMINATE_GRACE_SECONDS, stop_group, (pid, signal.SIGKILL))
        killer.daemon = True

        def stop() -> None:
            stop_group(pid, signal.SIGTERM)
            if killer.ident is None:
                killer.start()  # a test that ignores SIGTERM is killed after the grace period

        def on_signal(signum: int, frame: object) -> None:
            received.append(signum)
            stop()

        previous = _install_handlers(on_signal)
        tail = _Tail(log, echo) if echo is not None else None
        timed_out, code = False, None
        try:
            with leftovers.ZombieReaper(exclude={pid}):
                while code is None:
                    code = forked.poll()
                    late = timeout is not None and time.monotonic() - started > timeout
                    if code is None and late and not timed_out:
                        timed_out = True
                        stop()
                    if code is None:
                        forked.owner.wait(SLICE_SECONDS)
        except ForkServerLost:
            stop_group(pid, signal.SIGKILL)
            raise
        finally:
            timed["exited"] = time.time()
            killer.cancel()
            _restore_handlers(previous)
            with timings.phase("end leftovers"):
                stop_group(pid, signal.SIGKILL)
                ended = leftovers.end_orphans(exclude={pid})
                leftovers.release_orphans()
            if tail is not None:
                tail.stop()
    if ended:
        with open(log, "ab") as stream:
            stream.write(
                f"\n[flakewarden] ended {ended} process(es) the command left running\n".encode()
            )
    if received:
        raise Interrupted(received[0])
    return ChildResult(code, time.monotonic() - started, False, timed_out)


class _Tail:
    """Copies what is appended to a file to ``echo``, from a thread, until stopped."""

    def __init__(self, path: Path, echo: IO[bytes]) -> None:
        self.path, self.echo = path, echo
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tail", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        with contextlib.suppress(OSError), open(self.path, "rb") as stream:
            while True:
                stopping = self._stopped.wait(SLICE_SECONDS)
                while chunk := stream.read(TAIL_BYTES):
                    self.echo.write(chunk)
                    self.echo.flush()
                if stopping:
                    return

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join(timeout=10)
