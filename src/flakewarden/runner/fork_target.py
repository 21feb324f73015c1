"""Which interpreter a fork server runs in for a test command, when one can stand in for it.

Forking needs a command that is ``<python> -m pytest`` or a ``pytest`` console script
whose shebang names a python: the server must be started in the very interpreter the
command would start. Used by the stress engine and by the reruns alike.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple, Optional


class Target(NamedTuple):
    """How a command starts pytest, when a fork server can stand in for it."""

    python: str  # the interpreter, found as the command would find it
    script: Optional[str]  # the ``pytest`` console script; None for ``-m pytest``
    prefix: list[str]  # the command's tokens before pytest's own arguments


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
