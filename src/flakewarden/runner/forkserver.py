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
import os
import random
import select
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, Optional

from flakewarden.runner import leftovers
from flakewarden.runner.fork_target import Target
from flakewarden.runner.process import new_group, stop_group

FORKS_PER_SERVER = 16
READY_SECONDS = 60.0  # importing pytest and every plugin, on a loaded machine
REPLY_SECONDS = 30.0  # a fork's pid, a killed child's exit
CLOSE_SECONDS = 5.0
MAX_SKIPPED = 3  # plugins left to the children because importing them started a thread
SLICE_SECONDS = 0.05
OURS = "FLAKEWARDEN_"  # our per-run variables: the only ones a run may change under a server
HASH_SEED = "PYTHONHASHSEED"
MAX_HASH_SEED = 4294967295  # 0 turns hash randomisation off: drawn from 1 to this


def fixed_hash_seed(env: Mapping[str, str]) -> Optional[int]:
    """The hash seed ``env`` fixes, or None when each interpreter draws its own."""
    text = env.get(HASH_SEED, "").strip()
    return int(text) if text.isdigit() else None


def draw_hash_seed() -> int:
    return random.SystemRandom().randint(1, MAX_HASH_SEED)


class ForkServerLost(Exception):
    """The server died before it said how a child ended."""


def _never() -> None:
    return None


def stable_env(env: Mapping[str, str]) -> dict[str, str]:
    """What a run shares with the server: everything but flakewarden's own variables."""
    return {k: v for k, v in env.items() if not k.startswith(OURS)}


class Forked:
    """A child the server forked; it leads its own process group, like a spawned one."""

    def __init__(self, owner: ForkServer, server: _Process, pid: int) -> None:
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


class _Process:
    """One server process and what it said."""

    def __init__(self, command: Sequence[str], env: Mapping[str, str], cwd: Path) -> None:
        self.hash_seed = fixed_hash_seed(env)
        self.errors: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(
            list(command),
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.errors,
            **new_group(),
        )
        leftovers.keep(self.proc.pid)  # an attempt that ends meanwhile leaves it be
        assert self.proc.stdout is not None and self.proc.stdin is not None
        self.out = self.proc.stdout.fileno()
        os.set_blocking(self.out, False)
        self.pending = b""
        self.greeting: Optional[dict[str, Any]] = None
        self.replies: dict[int, dict[str, Any]] = {}
        self.exits: dict[int, int] = {}
        self.running: set[int] = set()
        self.forks = 0
        self.gone = False  # its stdout closed: it exited (or is about to)
        self.closing = False  # we closed its stdin

    def pump(self) -> None:
        while not self.gone:
            try:
                chunk = os.read(self.out, 1 << 16)
            except BlockingIOError:
                return
            except OSError:
                chunk = b""
            if not chunk:
                self.gone = True
                return
            self.pending += chunk
            while b"\n" in self.pending:
                line, self.pending = self.pending.split(b"\n", 1)
                self._take(json.loads(line))

    def _take(self, message: dict[str, Any]) -> None:
        if self.greeting is None:
            self.greeting = message
        elif "exit" in message:
            pid = int(message["pid"])
            self.exits[pid] = int(message["exit"])
            self.running.discard(pid)
        else:
            self.replies[int(message["id"])] = message

    def send(self, message: dict[str, Any]) -> bool:
        stdin = self.proc.stdin
        assert stdin is not None
        try:
            stdin.write((json.dumps(message) + "\n").encode("utf-8"))
            stdin.flush()
        except OSError:
            return False
        return True

    def why(self) -> str:
        """How it ended, with the last line it wrote to stderr."""
        code = self.proc.poll()
        self.errors.seek(0)
        lines = self.errors.read().decode("utf-8", "replace").strip().splitlines()
        said = f": {lines[-1].strip()}" if lines else ""
        return f"exit code {code}{said}" if code is not None else f"still running{said}"

    def close(self) -> None:
        """Close its stdin: it kills what it still runs and exits. One that runs nothing (a
        server warmed for runs that never came, still importing) is killed at once."""
        self.closing = True
        if not self.running:
            stop_group(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=CLOSE_SECONDS)
        except subprocess.TimeoutExpired:
            stop_group(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        leftovers.release(self.proc.pid)
        with contextlib.suppress(OSError):
            assert self.proc.stdout is not None
            self.proc.stdout.close()
        self.errors.close()


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
    ) -> None:
        self.target = target
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
        self._current: Optional[_Process] = None
        self._standby: Optional[_Process] = None
        self._retired: list[_Process] = []
        self._ids = itertools.count(1)

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
        server = self._ready(stop)
        if server is None:
            return None
        wanted = fixed_hash_seed(env)
        if wanted is not None and wanted != server.hash_seed:
            return None  # the run asks for a hash seed of its own: it is spawned with it
        if server.hash_seed is not None:
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
        if self.usable and self._current is None and self._standby is None:
            self._standby = self._launch()

    def pump(self) -> None:
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
        for server in self._alive():
            server.close()
        self._current = self._standby = None
        self._retired = []

    # -- servers ------------------------------------------------------------------

    def _alive(self) -> list[_Process]:
        found = [s for s in (self._current, self._standby) if s is not None]
        return [*found, *self._retired]

    def _wait_on(self, servers: Sequence[_Process], timeout: float) -> None:
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

    def _launch(self) -> _Process:
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
        return _Process(command, env, self.cwd)

    def _ready(self, stop: Callable[[], None]) -> Optional[_Process]:
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

    def _rotate(self, server: _Process) -> None:
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
