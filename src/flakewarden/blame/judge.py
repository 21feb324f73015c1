"""The verdict for one failed test: it ran the change, it ran none of it, or nobody can tell.

``touches`` needs a changed line the test executed, in its own coverage context. Short of
that, anything coverage cannot follow makes it ``unknown``, never ``untouched``: a changed
configuration file that reaches the test, a compiled extension's source, a deleted Python
module, a changed data file the test (or its collection) opened, a subprocess it started
while Python code changed, module-level code of a changed module the test uses (it runs at
import, in no test's context; "uses": the test ran a line of it, or the test's module is
it or refers to it or to something defined in it), a changed file that was imported but
not measured, or edits not committed. Only then ``untouched``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

from flakewarden.console import plural
from flakewarden.model import TestChange, TestResult

from .measured import Measured, Seen
from .plan import Plan

NOT_MEASURED = (
    "it was not measured: the change is measured on the rerun of the failed tests, "
    "and it was not rerun"
)


def _ranges(lines: set[int]) -> list[tuple[int, int]]:
    ranges: list[tuple[int, int]] = []
    for line in sorted(lines):
        if ranges and ranges[-1][1] == line - 1:
            ranges[-1] = (ranges[-1][0], line)
        else:
            ranges.append((line, line))
    return ranges


def _repo_path(plan: Plan, rootdir: str, file: str) -> Optional[str]:
    """A test's file (relative to pytest's rootdir) as a path from the repository's top."""
    if not file:
        return None
    try:
        full = Path(os.path.realpath(Path(rootdir) / file))
        return full.relative_to(os.path.realpath(plan.root)).as_posix()
    except ValueError:
        return None


def _shown_path(plan: Plan, real: str) -> str:
    for path in plan.python:
        if plan.absolute(path) == real:
            return path
    return real


def judge(plan: Plan, test: TestResult, measured: Measured, rootdir: str) -> TestChange:
    seen = measured.tests.get(test.id)
    if seen is None:
        return TestChange("unknown", why=NOT_MEASURED)
    ran: dict[str, list[tuple[int, int]]] = {}
    for path, mapped in plan.python.items():
        executed = seen.executed.get(plan.absolute(path))
        if executed and path not in plan.dirty:
            lines = mapped.ran(executed)
            if lines:
                ran[path] = _ranges(set(lines))
    if ran:
        change = TestChange("touches", ran)
        change.why = f"it executed {change.shown().removeprefix('ran ')}"
        return change
    doubts = _doubts(plan, test, seen, rootdir)
    if doubts:
        why = doubts[0] + (f" (and {plural(len(doubts) - 1, 'more reason')})" if doubts[1:] else "")
        return TestChange("unknown", why=why)
    files = len(plan.python)
    return TestChange(
        "untouched",
        why=f"it executed none of the {plural(plan.changed_lines, 'changed line')} "
        f"in {plural(files, 'changed Python file')}",
    )


def _doubts(plan: Plan, test: TestResult, seen: Seen, rootdir: str) -> list[str]:
    doubts: list[str] = []
    if seen.error:
        doubts.append(seen.error)
    config = plan.config_for(_repo_path(plan, rootdir, test.file))
    if config:
        doubts.append(f"{config[0]} changed, and it changes how the tests run")
    if plan.native:
        doubts.append(f"{plan.native[0]} changed: coverage cannot see into compiled code")
    if plan.gone:
        doubts.append(f"{plan.gone[0]} was deleted: no test can be seen to run code that is gone")
    read = seen.read or seen.collection_read
    if read:
        doubts.append(f"it read {_relative(plan, read[0])}, which the change altered")
    if seen.spawned and (plan.python or plan.data):
        doubts.append(
            f"it started a subprocess ({seen.spawned[0]}), which coverage does not follow"
        )
    for path in sorted(plan.python):
        real = plan.absolute(path)
        if real not in seen.imported:
            continue  # never loaded in the test's process: nothing of it could reach it
        mapped = plan.python[path]
        reached = bool(seen.executed.get(real)) or real in seen.uses
        if path in plan.dirty:
            doubts.append(f"{path} has edits not committed, so its lines do not match the diff")
        elif not mapped.parsed or path in plan.unparsed:
            doubts.append(f"{path} changed and is not Python this interpreter parses")
        elif mapped.at_import and reached:
            first = min(mapped.at_import)
            doubts.append(
                f"{path} changed module-level code (line {first}), which runs at import, "
                "and the test uses that module"
            )
        elif real not in seen.covered:
            doubts.append(f"{path} was imported but coverage measured none of it")
    return doubts


def _relative(plan: Plan, real: str) -> str:
    try:
        return Path(real).relative_to(os.path.realpath(plan.root)).as_posix()
    except ValueError:
        return real


def judge_report(plan: Plan, tests: list[TestResult], measured: Measured, rootdir: str) -> None:
    """Set ``change`` on every test whose first attempt failed."""
    for test in tests:
        if test.attempts and test.attempts[0].outcome.is_failure:
            test.change = judge(plan, test, measured, rootdir)
