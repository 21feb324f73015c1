"""Which collected tests burn-in stresses, and why: the tests a change adds or changes.

``select_for_burn_in(diff, items)`` reads each changed Python file that holds collected
tests or is a ``conftest.py`` (``definitions_changed``) and selects an item when:

- its function is new (``new test``) or changed (``changed test``); a test renamed or moved
  with its code unchanged is neither, so it is not selected;
- a class around it changed its own part (its decorators, bases or class-level
  statements), or a method of it that is no collected test (a helper, ``setup_method``)
  is new or changed (``in a changed class``);
- it uses a fixture that a changed ``conftest.py`` (for the tests under its directory) or its
  own test module defines, new or changed (``uses changed fixture NAME``). Which fixtures an
  item uses is pytest's ``item.fixturenames`` (every fixture it requests, through other
  fixtures too); an item without them recorded cannot be mapped and is listed as such.

A caller may select more items with reasons of its own (``also``: burn-in's tests never
seen on the base branch in the flake history); they join the order and the cap.

Every parametrized item of a selected function is selected. The selected items run most
recently changed first (the commit time of the last commit touching the file whose change
selected them), then by file and line; at most ``cap`` run, the rest are listed as not run.
When more than ``broad_share`` of the collected suite is selected the change is too broad
to burn in whole: the selection says so, and the cap still holds.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from .definitions import Definition, FileDefinitions, definitions_changed
from .diff import Diff, FileChange, Unavailable
from .git import GitUnusable, last_commit_time

NEW_TEST = "new test"
CHANGED_TEST = "changed test"
IN_CHANGED_CLASS = "in a changed class"
DEFAULT_CAP = 40
BROAD_SHARE = 0.3  # as Datadog's early flake detection: more than 30% new is not "a few tests"


def uses_changed_fixture(name: str) -> str:
    return f"uses changed fixture {name}"


@dataclass(frozen=True)
class CollectedItem:
    """A collected test: its node id, its file relative to pytest's rootdir (``/``), its line
    as pytest's ``item.location[1]`` (counted from 0; a decorated function's is its first
    decorator's) or None, and the fixtures it uses (``item.fixturenames``), None when not
    recorded. An item is matched to its function by the node id's names, and by the line
    when they name none (a test a subclass inherits)."""

    node_id: str
    path: str
    line: Optional[int] = None
    fixtures: Optional[tuple[str, ...]] = None


@dataclass(frozen=True)
class Selected:
    node_id: str
    reasons: tuple[str, ...]  # the strongest first
    changed_at: Optional[int] = None  # Unix time of the change that selected it, when known

    @property
    def reason(self) -> str:
        return self.reasons[0]


@dataclass(frozen=True)
class NotRun:
    """A test left out, and why."""

    node_id: str
    why: str


@dataclass(frozen=True)
class Selection:
    run: tuple[Selected, ...]  # in the order to run them, at most ``cap``
    not_run: tuple[NotRun, ...]  # selected, beyond the cap
    unmapped: tuple[NotRun, ...]  # a change may touch them, but it could not be told
    notes: tuple[str, ...]  # what the selection could not read, and the breadth guard
    collected: int
    cap: int
    too_broad: bool

    @property
    def selected(self) -> int:
        """How many tests the change selected, the cap aside."""
        return len(self.run) + len(self.not_run)


@dataclass(frozen=True)
class _Fixture:
    name: str
    path: str  # the file defining it
    directory: Optional[str]  # a conftest's: it serves the tests under it ("" the top)
    within: Optional[str]  # the class defining it, for a fixture method

    def serves(self, path: str, qualname: str) -> bool:
        if self.directory is not None:
            return self.directory == "" or path.startswith(f"{self.directory}/")
        if path != self.path:
            return False
        return self.within is None or qualname.startswith(f"{self.within}::")


def _qualname(node_id: str) -> str:
    """``Class::test`` of ``path::Class::test[param]``."""
    parts = [p for p in node_id.split("::")[1:] if p != "()"]
    if parts:
        parts[-1] = parts[-1].split("[", 1)[0]
    return "::".join(parts)


def _find(defs: FileDefinitions, qualname: str, line: Optional[int]) -> Optional[Definition]:
    for definition in defs.definitions:
        if definition.qualname == qualname and definition.kind == "function":
            return definition
    if line is None:
        return None
    around = [d for d in defs.definitions if d.kind == "function" and d.start <= line + 1 <= d.end]
    return max(around, key=lambda d: d.start, default=None)


def _classes(qualname: str) -> list[str]:
    parts = qualname.split("::")[:-1]
    return ["::".join(parts[: n + 1]) for n in range(len(parts))]


def _is_conftest(path: str) -> bool:
    return posixpath.basename(path) == "conftest.py"


class _Selector:
    def __init__(self, diff: Diff, prefix: str, items: Sequence[CollectedItem]) -> None:
        self.diff = diff
        self.notes: list[str] = []
        self.unmapped: list[NotRun] = []
        self.paths = [posixpath.normpath(f"{prefix}{item.path}") for item in items]
        self.items = items
        self.files: dict[str, FileDefinitions] = {}
        self.fixtures: list[_Fixture] = []
        self.tests: dict[str, set[str]] = {}  # per file, the functions of its items
        tested = set(self.paths)
        for change in diff.files:
            if change.path in tested or _is_conftest(change.path):
                self._read(change)

    def _read(self, change: FileChange) -> None:
        if change.status == "deleted":
            if _is_conftest(change.path):
                self.notes.append(f"{change.path} was deleted: its fixtures are not mapped")
            return
        if change.binary or not change.path.endswith(".py"):
            return
        found = definitions_changed(self.diff, change)
        if isinstance(found, Unavailable):
            self.notes.append(f"{found.reason}: its tests and fixtures are not selected")
            return
        self.files[change.path] = found
        conftest = _is_conftest(change.path)
        directory = posixpath.dirname(change.path) if conftest else None
        for touched in found.touched:
            fixture = touched.definition.fixture
            if fixture is not None and touched.touch != "renamed":
                parent = touched.definition.parent
                self.fixtures.append(_Fixture(fixture, change.path, directory, parent))
        if conftest:
            self._note_unmapped_conftest(change, found)

    def _note_unmapped_conftest(self, change: FileChange, found: FileDefinitions) -> None:
        others = [
            t.definition.qualname
            for t in found.touched
            if t.definition.fixture is None and t.touch != "renamed"
        ]
        if found.module_changed:
            others.append("module-level code")
        others.extend(f"{name} (removed)" for name in found.removed)
        if others:
            what = ", ".join(others)
            self.notes.append(
                f"{change.path} changed outside its fixtures ({what}): not mapped to tests"
            )

    def reasons(self) -> list[tuple[int, tuple[str, ...], set[str]]]:
        """Per selected item: its index, its reasons and the files whose change selected it."""
        resolved: list[Optional[Definition]] = []
        for item, path in zip(self.items, self.paths):
            defs = self.files.get(path)
            definition = None if defs is None else _find(defs, _qualname(item.node_id), item.line)
            resolved.append(definition)
            if definition is not None:
                self.tests.setdefault(path, set()).add(definition.qualname)
        chosen = []
        for index, (item, path, definition) in enumerate(zip(self.items, self.paths, resolved)):
            found, causes = self._item_reasons(item, path, definition)
            if found:
                chosen.append((index, tuple(dict.fromkeys(found)), causes))
        return chosen

    def _item_reasons(
        self, item: CollectedItem, path: str, definition: Optional[Definition]
    ) -> tuple[list[str], set[str]]:
        found: list[str] = []
        defs = self.files.get(path)
        qualname = _qualname(item.node_id)
        if defs is not None and definition is None and defs.touched:
            self.unmapped.append(NotRun(item.node_id, f"its definition was not found in {path}"))
        if defs is not None and definition is not None:
            touched = defs.touch_of(definition.qualname)
            if touched is not None and touched.touch in ("new", "changed"):
                found.append(NEW_TEST if touched.touch == "new" else CHANGED_TEST)
            classes = {*_classes(qualname), *_classes(definition.qualname)}
            if any(self._class_changed(defs, path, c) for c in classes):
                found.append(IN_CHANGED_CLASS)
        causes = {path} if found else set()
        missing: list[str] = []
        for fixture in self.fixtures:
            if not fixture.serves(path, qualname):
                continue
            if item.fixtures is None:
                missing.append(fixture.name)
            elif fixture.name in item.fixtures:
                found.append(uses_changed_fixture(fixture.name))
                causes.add(fixture.path)
        if missing:
            self.unmapped.append(
                NotRun(
                    item.node_id,
                    f"no fixture names recorded for it: conftest changes cannot be mapped "
                    f"to it (changed fixtures {', '.join(sorted(set(missing)))})",
                )
            )
        return found, causes

    def _class_changed(self, defs: FileDefinitions, path: str, qualname: str) -> bool:
        tests = self.tests.get(path, set())
        for touched in defs.touched:
            definition = touched.definition
            if touched.touch != "changed" and not (
                touched.touch == "new" and definition.parent == qualname
            ):
                continue
            if definition.qualname == qualname and definition.kind == "class":
                return True
            if definition.parent == qualname and definition.qualname not in tests:
                return True
        return False


def select_for_burn_in(
    diff: Diff,
    items: Sequence[CollectedItem],
    *,
    rootdir: Optional[Path] = None,
    cap: int = DEFAULT_CAP,
    broad_share: float = BROAD_SHARE,
    change_time: Optional[Callable[[str], Optional[int]]] = None,
    also: Optional[Mapping[str, str]] = None,
) -> Selection:
    """The tests of ``items`` that the change ``diff`` adds or changes, ordered and capped.

    ``rootdir`` is pytest's rootdir (the items' paths are relative to it; default: the
    repository's top). ``change_time(path)`` says when the file at ``path`` (relative to the
    repository) last changed; by default git's commit time, and when it fails the order is
    by file and line. ``also`` selects more items by node id, each with a reason, after
    the reasons the change gives; with no change time of their own they run after the items
    that have one.
    """
    prefix = ""
    if rootdir is not None:
        try:
            inside = rootdir.resolve().relative_to(diff.root.resolve()).as_posix()
        except ValueError:
            note = f"pytest's rootdir {rootdir} is outside the repository {diff.root}"
            return Selection((), (), (), (note,), len(items), cap, False)
        prefix = "" if inside == "." else f"{inside}/"
    selector = _Selector(diff, prefix, items)
    chosen = _with_also(selector.reasons(), items, also or {})
    timer = change_time or _git_time(diff)
    times: dict[str, Optional[int]] = {}
    selected = []
    for index, reasons, causes in chosen:
        for cause in causes:
            if cause not in times:
                times[cause] = timer(cause)
        known = [t for t in (times[c] for c in causes) if t is not None]
        selected.append((index, Selected(items[index].node_id, reasons, max(known, default=None))))
    selected.sort(
        key=lambda pair: (
            -(pair[1].changed_at or 0),
            selector.paths[pair[0]],
            items[pair[0]].line or 0,
            pair[0],
        )
    )
    ordered = [s for _, s in selected]
    notes = list(selector.notes)
    too_broad = bool(items) and len(ordered) > broad_share * len(items)
    if too_broad:
        notes.append(
            f"{len(ordered)} of {len(items)} collected tests are selected, more than "
            f"{broad_share:.0%}: the change is too broad to burn in whole; running the "
            f"{min(cap, len(ordered))} most recently changed"
        )
    why = f"beyond the cap of {cap} tests (the most recently changed run first)"
    return Selection(
        tuple(ordered[:cap]),
        tuple(NotRun(s.node_id, why) for s in ordered[cap:]),
        tuple(selector.unmapped),
        tuple(notes),
        len(items),
        cap,
        too_broad,
    )


def _with_also(
    chosen: list[tuple[int, tuple[str, ...], set[str]]],
    items: Sequence[CollectedItem],
    also: Mapping[str, str],
) -> list[tuple[int, tuple[str, ...], set[str]]]:
    """``chosen`` with the reasons of ``also`` added, its items not yet chosen included."""
    if not also:
        return chosen
    by_index = {index: (reasons, causes) for index, reasons, causes in chosen}
    for index, item in enumerate(items):
        reason = also.get(item.node_id)
        if reason is None:
            continue
        reasons, causes = by_index.get(index, ((), set()))
        by_index[index] = (tuple(dict.fromkeys((*reasons, reason))), causes)
    return [(index, *by_index[index]) for index in sorted(by_index)]


def _git_time(diff: Diff) -> Callable[[str], Optional[int]]:
    def timer(path: str) -> Optional[int]:
        try:
            return last_commit_time(diff.root, path, until=diff.head)
        except GitUnusable:
            return None

    return timer
