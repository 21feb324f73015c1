"""What the measured processes left: per test, the changed lines it executed and what it did
that coverage cannot follow.

Each process that measured (an attempt's, or a continuation's after a crash) has a folder
``blame/`` holding the plugin's ``seen-<pid>.jsonl`` and, unless the process was measured
anyway (``--coverage``, ``--cov``), its own ``.coverage-blame.*`` data files. A process
measured anyway keeps its contexts in the attempt's own coverage data.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flakewarden.outside_json import parse_json, read_confined

PROCESS_FOLDER = "blame"
DATA_PREFIX = ".coverage-blame"
#: pytest-cov's own contexts (``--cov-context=test``) end in the phase.
_PHASES = ("|setup", "|run", "|call", "|teardown")


@dataclass
class Seen:
    """One test in one measured process."""

    spawned: list[str] = field(default_factory=list)
    read: list[str] = field(default_factory=list)
    uses: set[str] = field(default_factory=set)  # changed files its module is or refers to
    executed: dict[str, set[int]] = field(default_factory=dict)  # real path -> lines
    # The process's: watched files read at collection, changed files imported, any error.
    collection_read: list[str] = field(default_factory=list)
    imported: set[str] = field(default_factory=set)
    error: str = ""
    # The changed files the process's coverage holds any line of, in any context.
    covered: set[str] = field(default_factory=set)


@dataclass
class Measured:
    """Every measured test, by node id; ``problems`` say what could not be read."""

    tests: dict[str, Seen] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def read_measured(parts: Iterable[Path], wanted: Iterable[str], cwd: Path) -> Measured:
    """Read each part's folder; ``wanted``: the changed Python files (real, normcased)."""
    files = set(wanted)
    measured = Measured()
    for part in parts:
        folder = part / PROCESS_FOLDER
        if not folder.is_dir():
            continue
        seen = _read_seen(folder, measured)
        data_files = sorted(folder.glob(DATA_PREFIX + "*")) + _attempt_data(part)
        executed, covered = _read_contexts(data_files, files, cwd, measured)
        for test, entry in seen.items():
            entry.executed, entry.covered = executed.get(test, {}), covered
            measured.tests[test] = entry  # a later part's (a rerun's) measure wins
    return measured


def _attempt_data(part: Path) -> list[Path]:
    from flakewarden.runner.coverage_merge import find_data_files

    return find_data_files(part)


#: A whole suite's records of what each test ran and read: larger than one report may be.
_MAX_SEEN = 256 * 1024 * 1024


def _read_seen(folder: Path, measured: Measured) -> dict[str, Seen]:
    found: dict[str, Seen] = {}
    for path in sorted(folder.glob("seen-*.jsonl")):
        tests: dict[str, Seen] = {}
        collection: list[str] = []
        imported: set[str] = set()
        error = ""
        try:
            lines = read_confined(path, folder, _MAX_SEEN).decode("utf-8").splitlines()
        except (OSError, ValueError) as problem:  # UnicodeDecodeError; Refused: a link out
            measured.problems.append(f"cannot read {path.name}: {problem}")
            continue
        for line in lines:
            try:
                entry: Any = parse_json(line, path.name)
            except ValueError:
                measured.problems.append(f"{path.name} holds a line that is not JSON")
                continue
            if not isinstance(entry, dict):
                continue
            if "imported" in entry:
                imported = {str(p) for p in entry.get("imported") or []}
                error = str(entry.get("error") or "")
            elif entry.get("id") == "":
                collection = [str(p) for p in entry.get("read") or []]
            elif isinstance(entry.get("id"), str):
                tests[entry["id"]] = Seen(
                    spawned=[str(c) for c in entry.get("spawned") or []],
                    read=[str(p) for p in entry.get("read") or []],
                    uses={str(p) for p in entry.get("uses") or []},
                )
        for test in tests.values():
            test.collection_read, test.imported, test.error = collection, imported, error
        found.update(tests)
    return found


def _test_of(context: str) -> str:
    for phase in _PHASES:
        if context.endswith(phase):
            return context[: -len(phase)]
    return context


def _read_contexts(
    data_files: list[Path], wanted: set[str], cwd: Path, measured: Measured
) -> tuple[dict[str, dict[str, set[int]]], set[str]]:
    """Per test, per changed file, the lines executed in the test's context; and the changed
    files measured at all."""
    covered: set[str] = set()
    if not data_files or not wanted:
        return {}, covered
    from coverage import CoverageData
    from coverage.exceptions import CoverageException

    executed: dict[str, dict[str, set[int]]] = {}
    for path in data_files:
        data = CoverageData(basename=str(path))
        try:
            data.read()
            files = data.measured_files()
        except (CoverageException, OSError, ValueError) as problem:
            measured.problems.append(f"cannot read coverage data {path.name}: {problem}")
            continue
        for name in files:
            real = os.path.normcase(os.path.realpath(cwd / name))
            if real not in wanted:
                continue
            try:
                by_line = data.contexts_by_lineno(name)
            except (CoverageException, ValueError) as problem:
                measured.problems.append(f"cannot read contexts of {name}: {problem}")
                continue
            if by_line:
                covered.add(real)
            for line, contexts in by_line.items():
                for context in contexts:
                    if context:
                        test = _test_of(context)
                        executed.setdefault(test, {}).setdefault(real, set()).add(line)
    return executed, covered
