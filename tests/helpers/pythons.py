"""The Pythons flakewarden supports, as pyproject.toml states them (docs/pythons.md).

Two ranges: the command-line tool's (``requires-python``) and, older at the bottom, that of
what runs inside the tests' own interpreter (the injected plugin, the fork server's child,
``flakewarden.retry``), stated as ruff's per-file target version for those files.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # coverage.py's own dependency before 3.11
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "src" / "flakewarden"
#: The files that run inside the tests' interpreter, relative to the repository.
INSIDE = ("src/flakewarden/inside/**/*.py", "src/flakewarden/retry.py")


def pyproject() -> dict[str, Any]:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))


def _parse(version: str) -> tuple[int, int]:
    found = re.fullmatch(r"(?:>=|py)?3\.?(\d+)", version.strip())
    assert found, f"not a Python version this project writes: {version!r}"
    return 3, int(found[1])


def cli_floor() -> tuple[int, int]:
    """The oldest Python the command-line tool (and the action's own venv) runs on."""
    return _parse(pyproject()["project"]["requires-python"])


def plugin_floor() -> tuple[int, int]:
    """The oldest Python the tests themselves may run under, beneath flakewarden's plugin."""
    targets = pyproject()["tool"]["ruff"]["per-file-target-version"]
    floors = {_parse(targets[pattern]) for pattern in INSIDE}
    assert len(floors) == 1, f"the files run inside the tests' interpreter disagree: {targets}"
    return floors.pop()


def inside_files() -> list[Path]:
    """Every file that runs in the tests' own interpreter."""
    files: list[Path] = []
    for pattern in INSIDE:
        files += sorted(REPO.glob(pattern))
    return files


def dotted(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"
