"""Fresh processes in milliseconds: stress runs forked from a server that imported pytest once.

Spawning ``python -m pytest`` pays the interpreter's and pytest's start-up in
every process (0.3-0.5 s). ``ForkServer`` instead starts ``inside/fork_child.py``
in the tested interpreter, which imports pytest and the installed plugins once
and forks a child per run; the child imports the test modules and conftest
files itself, so the test's own state is fresh in every run. See the script's
docstring for the protocol and ``docs/stress.md`` for what is shared.

The hash seed (``PYTHONHASHSEED``) is fixed when an interpreter starts, so a
server is replaced after ``FORKS_PER_SERVER`` forks: a stress run still sees
many seeds. The next server is started when the current one is halfway, so the
replacement rarely makes a run wait. Unless the environment fixes it, each
server's hash seed is drawn here and set, so every child's is known
(``Forked.hash_seed``) and replays; a run that asks for another hash seed in its
environment is not forked (it is spawned with that seed).

Anything that makes forking unsafe or impossible ends the server for the rest
of the run and the processes are spawned as before (``note`` says why); a
plugin whose import starts a thread is instead left for each child to import.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import select
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Optional

from flakewarden.runner.fork_process import (
    HASH_SEED,
    ServerProcess,
    draw_hash_seed,
    fixed_hash_seed,
)
from flakewarden.runner.fork_target import Target

FORKS_PER_SERVER = 16
READY_SECONDS = 60.0  # importing pytest and every plugin, on a loaded machine
REPLY_SECONDS = 30.0  # a fork's pid, a killed child's exit
MAX_SKIPPED = 3  # plugins left to the children because importing them started a thread
SLICE_SECONDS = 0.05
OURS = "FLAKEWARDEN_"  # our per-run variables: the only ones a run may change under a server


class ForkServerLost(Exception):
    """The server died before it said how a child ended."""


def _never() -> None:
    return None


def stable_env(env: Mapping[str, str]) -> dict[str, str]:
    """What a run shares with the server: everything but flakewarden's own variables."""
    return {k: v for k, v in env.items() if not k.startswith(OURS)}


class Forked:
    """A child the server forked; it leads its own process group, like a spawned one."""

    def __init__(self, owner: ForkServer, server: ServerProcess, pid: int) -> None:
        self.owner = owner
        self.server = server
        self.pid = pid
        self.hash_seed = server.hash_seed

    def poll(self) -> Optional[int]:
        """The exit code once the server reaped the child (negative: killed by a signal)."""
        self.owner.pump()
        if self.pid in self.server.exits:
            return self.server.exits[self.pid]
        if self.server.gone:
            raise ForkServerLost(self.pid)
        return None

    def wait(self, timeout: float = REPLY_SECONDS) -> Optional[int]:
        """Wait for the exit (after a kill); None if the server cannot say any more."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                code = self.poll()
            except ForkServerLost:
                return None
            if code is not None or time.monotonic() > deadline:
                return code
            self.owner.wait(SLICE_SECONDS)


class ForkServer:
    """Fork servers for one command in one interpreter, replaced every ``forks_per_server``.

    ``start`` forks a run's child (None: spawn it instead, ``usable`` turned
    false and ``note`` says why); ``pump``/``wait`` read what the servers said.
    """

    def __init__(
        self,
        target: Target,
        script: Path,
        cwd: Path,
        env: Mapping[str, str],
        *,
        forks_per_server: Optional[int] = None,
        conftests: Sequence[str] = (),  # imported by each server after the plugins
        rootdir: str = "",
        # Start the next server when the current one is halfway; False: only ``prepare`` does.
        warm_ahead: bool = True,
        # Set the drawn hash seed in each child's environment, so that the subprocesses of a
        # run share it (a stress run replays); False: the environment is the run's own, as a
        # new process's would be (a rerun's subprocesses draw their own).
        hash_seed_in_env: bool = True,
    ) -> None:
        self.target = target
        self.hash_seed_in_env = hash_seed_in_env
        self.conftests, self.rootdir = list(conftests), rootdir
        self.warm_ahead = warm_ahead
        self.script = script
        self.cwd = cwd
        self.env = stable_env(env)
        # Unless the environment fixes the hash seed, each server gets one drawn here.
        self.draws_hash_seed = fixed_hash_seed(self.env) is None
        if self.draws_hash_seed:
            self.env.pop(HASH_SEED, None)
        if forks_per_server is None:
            # A fixed hash seed is the same in every process anyway: no need to replace.
            forks_per_server = FORKS_PER_SERVER if self.draws_hash_seed else 0
        self.forks_per_server = forks_per_server
        self.usable = True
        self.note = ""
        self.why = ""  # why it became unusable, in a few words
        self.forked = 0
        self.servers = 0
        self.skipped: list[str] = []
        self._current: Optional[ServerProcess] = None
        self._standby: Optional[ServerProcess] = None
        self._retired: list[ServerProcess] = []
        self._ids = itertools.count(1)
        # ``prepare`` may come from a thread reading records while ``pump`` and ``start``
        # run in the caller's: the servers are changed under this lock only.
        self._lock = threading.RLock()

    def __enter__(self) -> ForkServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- what the pool calls ------------------------------------------------------

    def args_for(self, command: Sequence[str], env: Mapping[str, str]) -> Optional[list[str]]:
        """pytest's arguments when this server can run ``command`` in ``env``, else None."""
        prefix = self.target.prefix
        if not self.usable or list(command[: len(prefix)]) != prefix:
            return None
        if self._comparable(env) != self.env:
            return None  # something the interpreter reads as it starts may differ
        return list(command[len(prefix) :])

    def start(
        self,
        args: Sequence[str],
        cwd: Path,
        env: Mapping[str, str],
        log: Path,
        *,
        stop: Callable[[], None] = _never,
    ) -> Optional[Forked]:
        """Fork one run; None when it must be spawned. ``stop`` raises to abandon a wait."""
        if not cwd.is_dir():
            return None  # spawning says so, as it always has
        with self._lock:
            return self._start(args, cwd, env, log, stop)

    def _start(
        self,
        args: Sequence[str],
        cwd: Path,
        env: Mapping[str, str],
        log: Path,
        stop: Callable[[], None],
    ) -> Optional[Forked]:
        server = self._ready(stop)
        if server is None:
            return None
        wanted = fixed_hash_seed(env)
        if wanted is not None and wanted != server.hash_seed:
            return None  # the run asks for a hash seed of its own: it is spawned with it
        if server.hash_seed is not None and self.hash_seed_in_env:
            env = {**env, HASH_SEED: str(server.hash_seed)}  # a child's own subprocesses too
        with open(log, "wb"):
            pass  # made here, so an unwritable log fails as a spawn's would
        ident = next(self._ids)
        message = {"id": ident, "args": list(args), "env": dict(env), "cwd": str(cwd)}
        if not server.send({**message, "log": str(log)}):
            self._fail(f"the fork server stopped reading requests ({server.why()})")
            return None
        deadline = time.monotonic() + REPLY_SECONDS
        while ident not in server.replies and not server.gone:
            stop()
            if time.monotonic() > deadline:
                self._fail(f"the fork server did not fork within {REPLY_SECONDS:.0f} s")
                return None
            self._wait_on([server], SLICE_SECONDS)
        reply = server.replies.pop(ident, None)
        if reply is None or "pid" not in reply:
            detail = reply.get("error") if reply else server.why()
            self._fail(f"the fork server could not fork ({detail})")
            return None
        pid = int(reply["pid"])
        server.forks += 1
        server.running.add(pid)
        self.forked += 1
        self._rotate(server)
        return Forked(self, server, pid)

    def prepare(self) -> None:
        """Start the server that forks next now, so that it is ready when the first run comes."""
        with self._lock:
            if self.usable and self._current is None and self._standby is None:
                self._standby = self._launch()

    def pump(self) -> None:
        with self._lock:
            self._pump()

    def _pump(self) -> None:
        for server in self._alive():
            server.pump()
            if not server.gone or server.closing:
                continue
            greeting = server.greeting
            if greeting is not None and not greeting.get("ready"):
                continue  # it said why it would not serve, and left: ``_ready`` reads why
            server.closing = True
            self._fail(f"the fork server (pid {server.proc.pid}) died ({server.why()})")
        for server in list(self._retired):
            if not server.running or server.gone:
                self._retired.remove(server)
                server.close()

    def wait(self, timeout: float) -> None:
        """Until a server says something, or ``timeout`` seconds."""
        self._wait_on(self._alive(), timeout)

    def close(self) -> None:
        with self._lock:
            for server in self._alive():
                server.close()
            self._current = self._standby = None
            self._retired = []

    # -- servers ------------------------------------------------------------------

    def _alive(self) -> list[ServerProcess]:
        found = [s for s in (self._current, self._standby) if s is not None]
        return [*found, *self._retired]

    def _wait_on(self, servers: Sequence[ServerProcess], timeout: float) -> None:
        fds = [s.out for s in servers if not s.gone]
        if fds:
            with contextlib.suppress(InterruptedError):
                select.select(fds, [], [], timeout)
        else:
            time.sleep(timeout)
        self.pump()

    def _comparable(self, env: Mapping[str, str]) -> dict[str, str]:
        """What must equal the server's environment for a run to be forked from it."""
        stable = stable_env(env)
        if self.draws_hash_seed:
            stable.pop(HASH_SEED, None)  # checked against the server's own in ``start``
        return stable

    def _launch(self) -> ServerProcess:
        self.servers += 1
        target = self.target
        command = [target.python, str(self.script)]
        command += ["--module"] if target.script is None else ["--script", target.script]
        for plugin in self.skipped:
            command += ["--skip", plugin]
        command += ["--prefix", json.dumps(target.prefix)]
        for conftest in self.conftests:
            command += ["--conftest", conftest]
        if self.conftests:
            command += ["--rootdir", self.rootdir]
        env = dict(self.env)
        if self.draws_hash_seed:
            env[HASH_SEED] = str(draw_hash_seed())
        return ServerProcess(command, env, self.cwd)

    def _ready(self, stop: Callable[[], None]) -> Optional[ServerProcess]:
        """The server that forks next, once it has greeted; None when there is none."""
        while self.usable:
            if self._current is None:
                self._current, self._standby = self._standby or self._launch(), None
            server = self._current
            deadline = time.monotonic() + READY_SECONDS
            while server.greeting is None and not server.gone:
                stop()
                if time.monotonic() > deadline:
                    self._fail(f"the fork server was not ready within {READY_SECONDS:.0f} s")
                    return None
                self._wait_on([server], SLICE_SECONDS)
            greeting = server.greeting
            if not self.usable:
                return None  # another server died meanwhile
            if greeting is not None and greeting.get("ready"):
                return server
            self._current = None
            server.close()
            if greeting is None:
                self._fail(f"the fork server failed to start ({server.why()})")
                return None
            plugin = str(greeting.get("plugin") or "")
            if plugin and len(self.skipped) < MAX_SKIPPED:
                self.skipped.append(plugin)  # a new server leaves it to the children
                if self._standby is not None:
                    self._standby.close()
                    self._standby = None
                continue
            self._fail(_refusal(greeting))
        return None

    def _rotate(self, server: ServerProcess) -> None:
        limit = self.forks_per_server
        if limit <= 0 or server is not self._current:
            return
        ahead = self.warm_ahead and self._standby is None
        if ahead and server.forks >= max(1, limit // 2):
            self._standby = self._launch()
        if server.forks >= limit:
            self._retired.append(server)
            self._current = None

    def _fail(self, why: str) -> None:
        """No more forks: the children already forked still report through their servers."""
        if self.usable:
            self.usable = False
            self.why = why
            self.note = f"{why}: every later process was spawned afresh"
        for server in (self._current, self._standby):
            if server is not None:
                self._retired.append(server)
        self._current = self._standby = None


def _refusal(greeting: Mapping[str, Any]) -> str:
    if greeting.get("reason") == "threads":
        count = greeting.get("threads")
        after = str(greeting.get("after") or "")
        where = {
            "start-up": "as soon as it started (a sitecustomize or .pth file?)",
            "pytest": "after importing pytest",
            "plugin": f"after importing the plugin {greeting.get('plugin')}",
            "conftest": f"after importing {greeting.get('conftest')}",
        }.get(after, after)
        return f"the tested interpreter ran {count} threads {where}, and forking it is unsafe"
    conftest = greeting.get("conftest")
    if greeting.get("reason") == "sockets":
        return f"importing {conftest} opened a socket, which forked children would share"
    if conftest:
        return f"importing {conftest} in the fork server failed ({greeting.get('error')})"
    return f"the fork server could not start pytest ({greeting.get('error', greeting)})"
