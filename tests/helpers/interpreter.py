"""This suite's interpreter under the names a workflow script calls it by (``python``).

A script a test runs as a workflow step calls ``python``, which must be the interpreter
running the suite: flakewarden is installed there, and perhaps only there. Neither a link to
``sys.executable`` nor a copy of it will do: a link to a virtualenv's interpreter from outside
the virtualenv is no longer that virtualenv (Python looks for ``pyvenv.cfg`` beside the path it
was started as), so it would import from the base installation. Nor is the folder of
``sys.executable`` enough: it may hold ``python3`` and no ``python`` (Debian's /usr/bin). A
two-line wrapper that execs ``sys.executable`` by the path it was started as is that
interpreter, in or out of a virtualenv.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path


def python_bin(directory: Path, names: tuple[str, ...] = ("python", "python3")) -> Path:
    """``directory``, created, holding a wrapper per name that runs this suite's interpreter."""
    directory.mkdir(parents=True, exist_ok=True)
    for name in names:
        wrapper = directory / name
        wrapper.write_text(
            f'#!/bin/sh\nexec {shlex.quote(sys.executable)} "$@"\n', encoding="utf-8"
        )
        wrapper.chmod(0o755)
    return directory


def path_with_python(directory: Path, path: str | None = None) -> str:
    """A ``PATH`` whose ``python`` and ``python3`` are this suite's interpreter, then ``path``."""
    rest = os.environ.get("PATH", "") if path is None else path
    return f"{python_bin(directory)}{os.pathsep}{rest}"
