"""Whether a stress run's processes are forked from a server or spawned afresh.

Decided once per stress run, after the probe has shown how the command starts
pytest. Forking needs Linux, a command that is ``<python> -m pytest`` or a
``pytest`` console script whose shebang names a python, and no
``FLAKEWARDEN_STRESS_FORK=0``; anything else spawns every process as before.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Optional

from flakewarden.runner.fork_target import target_for
from flakewarden.runner.forkserver import ForkServer
from flakewarden.runner.process import FORK_SERVER_FILE
from flakewarden.runner.pytest_args import PytestCommand

FORK_ENV = "FLAKEWARDEN_STRESS_FORK"
FORK_SERVER = "fork server"
SPAWN = "spawn"


class Launcher:
    """One stress run's choice of fork server or spawn, and why.

    ``server_for`` decides on its first call and starts no process itself: the
    server starts with the first fork. ``mechanism`` and ``note`` say what ran.
    """

    def __init__(self) -> None:
        self.server: Optional[ForkServer] = None
        self.decided = False
        self.reason = ""  # why the fork server was not used at all

    def __enter__(self) -> Launcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.server is not None:
            self.server.close()

    def server_for(
        self, split: Optional[PytestCommand], plugin: Path, cwd: Path, env: Mapping[str, str]
    ) -> Optional[ForkServer]:
        if not self.decided:
            self.decided = True
            self.server = self._decide(split, plugin, cwd, env)
        if self.server is None or not self.server.usable:
            return None
        return self.server

    def _decide(
        self, split: Optional[PytestCommand], plugin: Path, cwd: Path, env: Mapping[str, str]
    ) -> Optional[ForkServer]:
        if os.environ.get(FORK_ENV, "").strip() == "0":
            self.reason = f"{FORK_ENV}=0: every process was spawned afresh"
            return None
        if not sys.platform.startswith("linux") or not hasattr(os, "fork"):
            self.reason = "every process was spawned afresh: the fork server needs Linux"
            return None
        target = None if split is None else target_for(split.prefix, cwd, env)
        if target is None:
            self.reason = (
                "the command does not start pytest as `<python> -m pytest` or a `pytest` "
                "script whose #! line names a python: every process was spawned afresh"
            )
            return None
        return ForkServer(target, plugin / FORK_SERVER_FILE, cwd, env)

    @property
    def mechanism(self) -> str:
        """``"fork server"`` once any run was forked, else ``"spawn"``."""
        return FORK_SERVER if self.server is not None and self.server.forked else SPAWN

    @property
    def note(self) -> str:
        """Why (some) processes were spawned, and what a fork server left to its children."""
        if self.server is None:
            return self.reason
        parts = []
        skipped = self.server.skipped
        if skipped:
            parts.append(
                f"the fork server left {', '.join(skipped)} for each child to import: "
                f"importing {'it' if len(skipped) == 1 else 'each'} started a thread"
            )
        if self.server.note:
            parts.append(self.server.note)
        return "; ".join(parts)
