"""A burn-in, start to end: the diff, one collection, the selection, then each test stressed.

Each step that finds nothing to do ends the burn-in there, green: no diff (it says what to
fetch), no Python change, nothing selected. The tests run one after another (the engine
already uses the cores), each with its share of the budget.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from flakewarden.changes import (
    Diff,
    NotRun,
    Selected,
    Selection,
    Unavailable,
    changes_since,
    select_for_burn_in,
)
from flakewarden.changes.git import GitUnusable, run_git
from flakewarden.changes.selection import DEFAULT_CAP
from flakewarden.console import plural
from flakewarden.errors import FlakewardenError
from flakewarden.history.seen import seen_on_branch
from flakewarden.history.store import HistoryStore
from flakewarden.model import ExitCode
from flakewarden.runner.process import Interrupted

from . import budget as shares
from .collect import Collection, collect, file_order
from .outcome import TestOutcome, error_outcome, outcome_of
from .stress_one import stress_test

Say = Callable[[str], None]
TESTS_DIR = "tests"
COLLECTION_DIR = "collection"
ORDERS_DIR = "orders"


@dataclass(frozen=True)
class BurnInOptions:
    command: list[str]
    cwd: Path
    report_dir: Path
    base: Optional[str] = None  # default: the pull request's base, else origin/HEAD
    budget_seconds: float = shares.DEFAULT_BUDGET_SECONDS
    cap: int = DEFAULT_CAP
    history: Optional[Path] = None
    fail_on_flaky: bool = True


@dataclass
class BurnIn:
    """What a burn-in found and did, as far as it got."""

    options: BurnInOptions
    diff: Optional[Diff] = None
    unavailable: Optional[str] = None  # no diff: why, and what to fetch
    collection: Optional[Collection] = None
    selection: Optional[Selection] = None
    base_branch: Optional[str] = None  # the base as the history names its branch
    over_budget: list[NotRun] = field(default_factory=list)
    outcomes: list[TestOutcome] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    interrupted: bool = False
    seconds: float = 0.0

    @property
    def failing(self) -> list[TestOutcome]:
        return [o for o in self.outcomes if o.failing]

    @property
    def collect_errors(self) -> tuple[tuple[str, str], ...]:
        return () if self.collection is None else self.collection.errors

    @property
    def exit_code(self) -> int:
        if self.interrupted:
            return int(ExitCode.INTERRUPTED)
        if self.collect_errors or (self.failing and self.options.fail_on_flaky):
            return int(ExitCode.TESTS_FAILED)
        return int(ExitCode.OK)


def slug(index: int, node_id: str) -> str:
    """A folder name for a test's stress files: its number, then its id made path-safe."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", node_id.replace("::", "-")).strip("-.")
    return f"{index:02d}-{safe[:60] or 'test'}"


def base_branch(root: Path, base: str) -> str:
    """The branch ``base`` names, as a run records it: ``origin/HEAD`` -> ``main``."""
    name = base
    try:
        answer = run_git(root, ["rev-parse", "--abbrev-ref", "--verify", "--quiet", base])
        if answer.ok and answer.line and answer.line != "HEAD":
            name = answer.line
        remotes = set(run_git(root, ["remote"]).text.split())
    except GitUnusable:
        remotes = {"origin"}
    for prefix in ("refs/heads/", "refs/remotes/"):
        name = name.removeprefix(prefix)
    first, _, rest = name.partition("/")
    return rest if rest and first in remotes else name


def run_burn_in(options: BurnInOptions, say: Say, progress: Say) -> BurnIn:
    """Burn in the tests HEAD adds or changes; ``say`` tells the user, ``progress`` the
    engine's steps. Stops early, green, when there is nothing to burn in."""
    started = time.monotonic()
    result = BurnIn(options)
    try:
        _run(result, say, progress)
    except Interrupted:
        result.interrupted = True
    result.seconds = time.monotonic() - started
    return result


def _run(result: BurnIn, say: Say, progress: Say) -> None:
    options = result.options
    diff = changes_since(options.cwd, options.base)
    if isinstance(diff, Unavailable):
        result.unavailable = diff.reason
        return
    result.diff = diff
    say(
        f"HEAD {diff.head[:12]} against {diff.base} (merge base {diff.merge_base[:12]}): "
        f"{plural(len(diff.files), 'file')} changed"
    )
    if options.history is None and not any(f.path.endswith(".py") for f in diff.files):
        result.notes.append("the change touches no Python file: no test to burn in")
        return
    collection = collect(options.command, options.cwd, options.report_dir / COLLECTION_DIR)
    result.collection = collection
    say(f"collected {plural(len(collection.items), 'test')} in {collection.seconds:.1f} s")
    also, durations = _history(result, [i.node_id for i in collection.items])
    selection = select_for_burn_in(
        diff, collection.items, rootdir=collection.rootdir, cap=options.cap, also=also
    )
    result.selection = selection
    _stress_all(result, durations, say, progress)


def _history(result: BurnIn, ids: list[str]) -> tuple[dict[str, str], dict[str, float]]:
    """With ``--history``: the collected tests the base branch never ran, and the
    durations it measured."""
    options, diff = result.options, result.diff
    if options.history is None or diff is None:
        return {}, {}
    branch = base_branch(diff.root, diff.base)
    result.base_branch = branch
    with HistoryStore.open(options.history, create=False) as store:
        seen = seen_on_branch(store, branch)
    if not seen.runs:
        result.notes.append(
            f"the history {options.history} holds no run of {branch}: every test would "
            "count as never seen there, so it selects none"
        )
        return {}, {}
    why = f"never seen on {branch}"
    return {i: why for i in ids if i not in seen.durations}, seen.durations


def _stress_all(result: BurnIn, durations: dict[str, float], say: Say, progress: Say) -> None:
    options, selection, collection = result.options, result.selection, result.collection
    assert selection is not None and collection is not None
    chosen = list(selection.run)
    known = [durations.get(s.node_id) for s in chosen]
    floors = [shares.floor_seconds(collection.seconds, d) for d in known]
    fits = shares.fitting(options.budget_seconds, floors)
    for late in chosen[fits:]:
        result.over_budget.append(
            NotRun(
                late.node_id,
                f"the {options.budget_seconds:g} s budget leaves it less than the "
                f"{floors[chosen.index(late)]:.0f} s a stress run needs before its timing "
                "phase (raise --budget-seconds)",
            )
        )
    chosen, weights, floors = chosen[:fits], shares.weights(known[:fits]), floors[:fits]
    _announce(result, chosen, say)
    begun = time.monotonic()
    for index, selected in enumerate(chosen):
        remaining = options.budget_seconds - (time.monotonic() - begun)
        seconds = float(round(shares.share(remaining, weights[index:], floors[index:])))
        say(f"[{index + 1}/{len(chosen)}] {selected.node_id}: stressing for up to {seconds:.0f} s")
        outcome = _stress_one(
            result, index + 1, selected, seconds, _numbered(progress, index + 1, len(chosen))
        )
        result.outcomes.append(outcome)
        mark = "NEW FLAKY TEST" if outcome.failing else outcome.verdict
        say(f"[{index + 1}/{len(chosen)}] {selected.node_id}: {mark}: {outcome.summary()}")


def _numbered(progress: Say, number: int, total: int) -> Say:
    return lambda line: progress(f"[{number}/{total}] {line}")


def _announce(result: BurnIn, chosen: list[Selected], say: Say) -> None:
    selection = result.selection
    assert selection is not None
    for where, text in result.collect_errors:
        last = (text.strip().splitlines() or [""])[-1]
        say(f"collection error in {where or '.'}: {last}")
    if not selection.selected:
        say(f"no test selected of {plural(selection.collected, 'collected test')}")
    else:
        say(
            f"selected {plural(selection.selected, 'test')} of {selection.collected} collected"
            f"; stressing {len(chosen)} within {result.options.budget_seconds:g} s:"
        )
    for selected in chosen:
        say(f"  run: {selected.node_id} ({'; '.join(selected.reasons)})")
    for left in (*selection.not_run, *result.over_budget):
        say(f"  not run: {left.node_id} ({left.why})")
    for left in selection.unmapped:
        say(f"  not mapped: {left.node_id} ({left.why})")
    for note in (*selection.notes, *result.notes):
        say(f"  note: {note}")


def _stress_one(
    result: BurnIn, number: int, selected: Selected, seconds: float, progress: Say
) -> TestOutcome:
    options, collection = result.options, result.collection
    assert collection is not None
    folder = f"{TESTS_DIR}/{slug(number, selected.node_id)}"
    item = collection.item(selected.node_id)
    file = None if item is None else item.path
    line = None if item is None or item.line is None else item.line + 1
    directory = options.report_dir / folder
    order = file_order(collection, selected.node_id, options.report_dir / ORDERS_DIR, number)
    try:
        verdict = stress_test(
            selected.node_id, options.command, options.cwd, directory, seconds, progress, order
        )
    except Interrupted:
        raise
    except FlakewardenError as error:
        return error_outcome(
            selected, str(error), budget=seconds, directory=folder, file=file, line=line
        )
    return outcome_of(selected, verdict, budget=seconds, directory=folder, file=file, line=line)
