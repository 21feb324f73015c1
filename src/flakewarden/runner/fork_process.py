"""One fork server process: its start, its replies and how it ended; and the hash seed.

``ForkServer`` (``forkserver.py``) decides when to start, rotate and give up on a server;
this holds the process itself and the protocol of ``inside/fork_child.py`` it speaks (one
JSON object per line each way), so the two stay under one screen each.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any, Optional

from flakewarden.runner import leftovers
from flakewarden.runner.process import new_group, stop_group

CLOSE_SECONDS = 5.0
HASH_SEED = "PYTHONHASHSEED"
MAX_HASH_SEED = 4294967295  # 0 turns hash randomisation off: drawn from 1 to this


def fixed_hash_seed(env: Mapping[str, str]) -> Optional[int]:
    """The hash seed ``env`` fixes, or None when each interpreter draws its own."""
    text = env.get(HASH_SEED, "").strip()
    return int(text) if text.isdigit() else None


def draw_hash_seed() -> int:
    return random.SystemRandom().randint(1, MAX_HASH_SEED)


class ServerProcess:
    """One server process and what it said."""

    def __init__(self, command: Sequence[str], env: Mapping[str, str], cwd: Path) -> None:
        self.hash_seed = fixed_hash_seed(env)
        self.errors: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 - closed in close()
        with leftovers.starting():  # an attempt that ends meanwhile leaves it be
            self.proc = subprocess.Popen(
                list(command),
                cwd=cwd,
                env=dict(env),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self.errors,
                **new_group(),
            )
            leftovers.keep(self.proc.pid)
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
