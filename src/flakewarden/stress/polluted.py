"""What an order-dependent test's polluter leaves behind, and the line that wrote it.

The where phase replays the polluter and the test with the state taken around each run
(``FLAKEWARDEN_STATE``, ``model.state``). A change the polluter made in every replay is
what it leaves behind; the line that wrote it is one the polluter's runs executed whose
code writes that name (``writes``); the test reads it where a line it ran names it. The
verdict says so: "`depot.settings.CURRENCY`: 'EUR' → 'USD', written at
tests/test_settings.py:9", and the writing line is the first suspect.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple, Optional

from flakewarden.model.records import TestRecord
from flakewarden.model.state import CWD, FILE, StateChange
from flakewarden.model.suspects import Suspect
from flakewarden.stress.cues import Source
from flakewarden.stress.writes import BY_NAME, IMPORT

SHOWN = 5  # changes named in the verdict
ORDER = {"global": 0, "class": 1, "env": 2, "cwd": 3, "file": 4, "module": 5}

Lines = Mapping[str, Mapping[int, int]]


class Left(NamedTuple):
    """One change the polluter left in every replay, with where it was written and read."""

    change: StateChange
    written_at: Optional[tuple[str, int]]
    read_at: Optional[tuple[str, int]]
    # the line writes that very name; False: it sets an attribute or imports a module by a
    # computed name, so it is only a candidate
    exact: bool = True

    def describe(self) -> str:
        said = self.change.describe()
        if self.written_at is not None:
            where = f"{self.written_at[0]}:{self.written_at[1]}"
            said += (
                f", written at {where}"
                if self.exact
                else f", possibly written at {where} (a name computed at run time)"
            )
        if self.read_at is not None:
            said += f" (the test reads it at {self.read_at[0]}:{self.read_at[1]})"
        return said

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = self.change.to_json()
        data["written_at"] = None if self.written_at is None else list(self.written_at)
        data["read_at"] = None if self.read_at is None else list(self.read_at)
        data["written_exactly"] = self.exact
        return data


def left_behind(polluter_runs: Sequence[Sequence[TestRecord]]) -> list[StateChange]:
    """The changes every replay's polluters made (to the same name), as the first made them."""
    per_run = []
    for records in polluter_runs:
        # the same name changed in every replay; its new value may differ (a time, an id)
        made = {(c.kind, c.name): c for record in records for c in (record.state or [])}
        if any(record.state is not None for record in records):
            per_run.append(made)
    if not per_run:
        return []
    common = set.intersection(*(set(run) for run in per_run))
    kept = [per_run[0][key] for key in common]
    return sorted(kept, key=lambda c: (ORDER.get(c.kind, 9), c.kind, c.name))


def _keys(change: StateChange) -> list[str]:
    """The names code writes or reads it by, the most precise first: an attribute of an
    object a module holds (``pkg.mod.config.PORT``) is also reached through the object."""
    if change.kind == "module":
        return [change.name]
    if change.kind == "cwd":
        return [CWD]
    if change.kind == "file":
        return [FILE]
    parts = change.name.split(".")
    return parts[-1:] + (parts[-2:-1] if change.kind == "global" and len(parts) > 2 else [])


def _lines_writing(
    change: StateChange, lines: Lines, source: Callable[[str], Source]
) -> tuple[list[tuple[str, int]], bool]:
    """The executed lines that write it (by its most precise name first); else those that set
    an attribute or import a module by a computed name (``writes.BY_NAME``, ``IMPORT``);
    and whether they write it by that name."""
    computed: list[tuple[str, int]] = []
    fallback = {"global": BY_NAME, "class": BY_NAME, "module": IMPORT}.get(change.kind)
    found: list[tuple[str, int]] = []
    for key in _keys(change):
        for file in sorted(lines):
            parsed = source(file)
            for line in sorted(lines[file]):
                names = parsed.writes.get(line, set())
                if key in names:
                    found.append((file, line))
                elif fallback in names and (file, line) not in computed:
                    computed.append((file, line))
        if found:
            break
    exact = bool(found)
    found = found or computed
    if change.kind == "file":  # a line that names the file, among those that write one
        named = [f for f in found if change.name.rsplit("/", 1)[-1] in source(f[0]).text(f[1])]
        found = named or found
    return found, exact


def _line_reading(
    change: StateChange, lines: Lines, source: Callable[[str], Source]
) -> Optional[tuple[str, int]]:
    """The first line the test ran that names it (as a whole word) without writing it."""
    if change.kind in ("cwd", "file"):
        return None
    for key in _keys(change):
        word = re.compile(
            rf"(?<![\w.]){re.escape(key)}(?!\w)"
            if change.kind == "module"
            else rf"\b{re.escape(key)}\b"
        )
        for file in sorted(lines):
            for line in sorted(lines[file]):
                if word.search(source(file).text(line)) and key not in source(file).writes.get(
                    line, ()
                ):
                    return file, line
    return None


def localise(
    polluter_runs: Sequence[Sequence[TestRecord]],
    polluter_lines: Lines,
    victim_lines: Lines,
    source: Callable[[str], Source],
) -> tuple[list[Left], list[Suspect]]:
    """What the polluter leaves behind (those the test reads first), and the writing lines."""
    changes = left_behind(polluter_runs)
    found = []
    for change in changes:
        writers, exact = _lines_writing(change, polluter_lines, source)
        read = _line_reading(change, victim_lines, source)
        found.append(Left(change, next(iter(writers), None), read, exact))
    found.sort(key=lambda left: (left.read_at is None, left.written_at is None))
    found = found[:SHOWN]
    runs = len([r for r in polluter_runs if any(x.state is not None for x in r)])
    suspects = []
    for left in found:
        if left.written_at is None and left.read_at is not None:
            # no line of the project's writes it (a library's code did): where the test
            # reads it is the line to open
            file, line = left.read_at
            evidence = (
                f"reads what was left behind ({left.change.describe()}), written by no line "
                f"of the project's that ran, in every one of {runs} replays"
            )
            suspects.append(
                Suspect(file, line, source(file).text(line), 0.6, evidence, {"state": 0.6})
            )
            continue
        if left.written_at is None:
            continue
        file, line = left.written_at
        does = "writes" if left.exact else "may write, by a name computed at run time,"
        evidence = (
            f"{does} what was left behind ({left.change.describe()}) in every one of {runs} replays"
        )
        score = (1.0 if left.read_at is not None else 0.8) if left.exact else 0.6
        suspects.append(
            Suspect(file, line, source(file).text(line), score, evidence, {"state": score})
        )
    unique = {s.location: s for s in reversed(suspects)}
    return found, sorted(unique.values(), key=lambda s: -s.score)
