"""What blame measures, from the diff: the changed Python lines, and what coverage cannot see.

Each changed file falls in one kind:

- ``python``: a changed ``.py`` file with changed lines, measured by coverage and mapped
  to the lines that count as running them (``statements``);
- ``config``: a file that changes how the tests run (``conftest.py``, for the tests in
  its folder, measured too: a test that ran a changed fixture line ran the change;
  ``pyproject.toml``, ``setup.cfg``, ``tox.ini``, ``pytest.ini``,
  ``setup.py``, requirement and lock files, for all);
- ``native``: the source of a compiled extension (C, C++, Cython, Rust, ...): coverage
  cannot see into it;
- ``gone``: a Python file the change deleted: no test can be seen to run what is gone;
- ``data``: anything else a test may read (JSON, templates, fixtures): watched, so a test
  that opened one is ``unknown``; a file nobody opened (docs, workflows) changes nothing;
- stubs (``.pyi``) and files with nothing but cosmetic changes are left out.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Optional

from flakewarden.changes import Diff
from flakewarden.changes.git import read_blob

from .statements import Mapped, map_lines

CONFIG_NAMES = frozenset(
    {
        "pyproject.toml",
        "setup.cfg",
        "tox.ini",
        "pytest.ini",
        "setup.py",
        "Pipfile",
        "Pipfile.lock",
        "poetry.lock",
        "uv.lock",
        "pdm.lock",
        "MANIFEST.in",
    }
)
REQUIREMENTS = re.compile(r"^(requirements|constraints)[\w.-]*\.(txt|in)$", re.IGNORECASE)
NATIVE_SUFFIXES = frozenset(
    {".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".pyx", ".pxd", ".pxi", ".rs", ".f"}
    | {".f90", ".cu", ".m", ".mm", ".so", ".pyd", ".dylib"}
)


@dataclass
class Plan:
    """The change sorted by what blame can see of it (see the module's docstring)."""

    diff: Diff
    python: dict[str, Mapped] = field(default_factory=dict)  # repo-relative path -> mapping
    changed: dict[str, frozenset[int]] = field(default_factory=dict)  # its changed lines
    config: list[str] = field(default_factory=list)
    native: list[str] = field(default_factory=list)
    gone: list[str] = field(default_factory=list)
    data: list[str] = field(default_factory=list)
    # Python files whose working copy is not HEAD's (uncommitted edits): lines do not match.
    dirty: list[str] = field(default_factory=list)
    unparsed: list[str] = field(default_factory=list)  # Python files that do not parse

    @property
    def root(self) -> Path:
        return self.diff.root

    def absolute(self, path: str) -> str:
        return os.path.normcase(os.path.realpath(self.root / path))

    @property
    def changed_lines(self) -> int:
        return sum(len(lines) for lines in self.changed.values())

    def config_for(self, test_file: Optional[str]) -> list[str]:
        """The changed configuration files that reach a test in ``test_file`` (repo path)."""
        return [path for path in self.config if _reaches(PurePosixPath(path), test_file)]

    def to_plugin(self, out: Path, shared: bool) -> dict[str, object]:
        """The plugin's plan (``FLAKEWARDEN_BLAME``)."""
        return {
            "out": str(out),
            "include": [self.absolute(p) for p in self.python],
            "watch": [self.absolute(p) for p in self.data],
            "shared": shared,
        }


def _reaches(config: PurePosixPath, test_file: Optional[str]) -> bool:
    """A ``conftest.py`` reaches the tests in its folder; any other config, every test."""
    if config.name != "conftest.py" or test_file is None or config.parent == PurePosixPath("."):
        return True
    return PurePosixPath(test_file).is_relative_to(config.parent)


def plan_for(diff: Diff) -> Plan:
    plan = Plan(diff)
    for change in diff.files:
        path = change.path
        name = PurePosixPath(path).name
        suffix = PurePosixPath(path).suffix.lower()
        if name == "conftest.py" and change.status != "deleted" and change.ranges:
            # Measured like any Python file (a fixture's changed body ran in the test), and
            # a doubt for the tests in its folder (its hooks run in no test's context).
            plan.config.append(path)
            _add_python(plan, path, frozenset(change.lines()), change.gaps)
        elif name == "conftest.py" or name in CONFIG_NAMES or REQUIREMENTS.match(name):
            if change.ranges or change.status in ("added", "deleted") or change.binary:
                plan.config.append(path)
        elif suffix in NATIVE_SUFFIXES:
            plan.native.append(path)
        elif suffix == ".py":
            if change.status == "deleted":
                plan.gone.append(path)
            elif change.ranges:
                _add_python(plan, path, frozenset(change.lines()), change.gaps)
        elif suffix != ".pyi" and (change.ranges or change.binary or change.status != "modified"):
            plan.data.append(path)
    return plan


def _add_python(plan: Plan, path: str, lines: frozenset[int], gaps: tuple[int, ...]) -> None:
    try:
        working = (plan.root / path).read_bytes()
    except OSError:
        working = None
    committed = read_blob(plan.root, plan.diff.head, path)
    source = committed if committed is not None else working
    if source is None:
        plan.unparsed.append(path)
        return
    if working is not None and committed is not None and working != committed:
        plan.dirty.append(path)
    mapped = map_lines(source, lines, gaps)
    if not mapped.parsed:
        plan.unparsed.append(path)
    plan.python[path] = mapped
    plan.changed[path] = lines
