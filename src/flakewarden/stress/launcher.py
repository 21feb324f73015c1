"""Whether a stress run's processes are forked from a server or spawned afresh.

Decided once per stress run, after the probe has shown how the command starts
pytest. Forking needs Linux, a command that is ``<python> -m pytest`` or a
``pytest`` console script whose shebang names a python, and no
``FLAKEWARDEN_STRESS_FORK=0``; anything else spawns every process as before.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Optional

from flakewarden.runner.process import FORK_SERVER_FILE
from flakewarden.runner.pytest_args import PytestCommand
from flakewarden.stress.forkserver import ForkServer, Target

FORK_ENV = "FLAKEWARDEN_STRESS_FORK"
FORK_SERVER = "fork server"
SPAWN = "spawn"
_PYTHON = re.compile(r"(python|pypy)[0-9.]*[a-z]?", re.IGNORECASE)
_PYTEST = ("pytest", "py.test")


def _find(program: str, cwd: Path, env: Mapping[str, str]) -> Optional[str]:
    """The file ``program`` names, found as ``subprocess`` would (``PATH`` of ``env``)."""
    if os.sep in program:
        path = program if os.path.isabs(program) else str(cwd / program)
        return path if os.access(path, os.X_OK) and os.path.isfile(path) else None
    return shutil.which(program, path=env.get("PATH", os.defpath))


def _shebang_python(script: str, env: Mapping[str, str]) -> Optional[str]:
    """The python a console script's ``#!`` line names: a path, or ``/usr/bin/env python3``."""
    try:
        with open(script, "rb") as stream:
            first = stream.readline(512)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode("utf-8", "replace").split()
    if len(words) == 2 and os.path.basename(words[0]) == "env":
        words = words[1:]
        found = shutil.which(words[0], path=env.get("PATH", os.defpath))
        if found is None:
            return None
        words = [found]
    if len(words) != 1 or not os.path.isabs(words[0]):
        return None  # interpreter options, or pip's /bin/sh trampoline: not followed
    if not _PYTHON.fullmatch(os.path.basename(words[0])) or not os.access(words[0], os.X_OK):
        return None
    return words[0]


def target_for(prefix: list[str], cwd: Path, env: Mapping[str, str]) -> Optional[Target]:
    """The interpreter a fork server must run in for this command's start, or None."""
    if len(prefix) == 3 and prefix[1:] == ["-m", "pytest"]:
        if not _PYTHON.fullmatch(os.path.basename(prefix[0])):
            return None
        python = _find(prefix[0], cwd, env)
        return None if python is None else Target(python, None, list(prefix))
    if len(prefix) == 1 and os.path.basename(prefix[0]).lower() in _PYTEST:
        script = _find(prefix[0], cwd, env)
        python = None if script is None else _shebang_python(script, env)
        if script is None or python is None:
            return None
        return Target(python, script, list(prefix))
    return None


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
