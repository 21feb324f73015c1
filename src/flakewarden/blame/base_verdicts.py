"""What the base's run says of each test: ``fails``, ``passes`` or ``error``, and why.

Pure: it reads the plugin's records of the one process the base check ran, how that
process ended, and which modules it loaded from the pull request's checkout. Every ``why``
is one line, whatever the records hold.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple, Optional

from flakewarden.model import AttemptOutcome, TestRecord
from flakewarden.model.blame import BaseCheck
from flakewarden.outside_json import parse_json, read_confined
from flakewarden.runner.process_results import ProcessResults

NOT_AT_BASE = "not at the base: the test is new, renamed or moved by this change"
MODULES_KIND = "modules"


def one_line(text: str, limit: int = 300) -> str:
    """``text`` on one line (every line break a space), at most ``limit`` characters."""
    joined = " ".join(part.strip() for part in text.splitlines() if part.strip())
    return joined if len(joined) <= limit else joined[: limit - 1] + "…"


class Ended(NamedTuple):
    """How the base's process ended."""

    exit_code: int
    timed_out: bool
    timeout: float
    log: Path


def loaded_files(results: Path) -> Optional[list[str]]:
    """The files the plugin's ``modules`` records name, in order; None when it wrote none."""
    found: Optional[dict[str, None]] = None
    try:
        lines = read_confined(results).decode("utf-8", errors="replace").split("\n")
    except (OSError, ValueError):  # none, or refused: a link out, a FIFO, too big
        return None
    for line in lines:
        if f'"{MODULES_KIND}"' not in line:
            continue
        try:
            data = parse_json(line, str(results))
        except ValueError:
            continue
        if isinstance(data, dict) and data.get("kind") == MODULES_KIND:
            files = data.get("files")
            found = {} if found is None else found
            for name in files if isinstance(files, list) else ():
                found.setdefault(str(name), None)
    return None if found is None else list(found)


def foreign_import(files: Sequence[str], checkout: Path) -> Optional[str]:
    """Why the run did not test the base, when it loaded a file of the pull request's
    checkout ``checkout``: the first such file named; None when it loaded none."""
    if not files:
        return None
    first = Path(files[0])
    try:
        shown = first.relative_to(checkout.resolve()).as_posix()
    except ValueError:
        shown = str(first)
    return one_line(
        f"imported {shown} from the pull request's checkout, not the base's (an editable install?)"
    )


def _record_check(records: list[TestRecord], commit: str) -> BaseCheck:
    outcomes = [r.outcome for r in records]
    unfinished = next((r.unfinished for r in records if r.unfinished), "")
    if unfinished:
        why = f"the session on the base ended while it ran: {unfinished}"
        return BaseCheck("error", commit, one_line(why))
    failed = [o for o in outcomes if o.is_failure]
    if failed:
        record = next(r for r in records if r.outcome.is_failure)
        if any(p.wasxfail for p in record.phases):
            return BaseCheck("fails", commit, "failed on the base, where it is marked xfail")
        what = {
            AttemptOutcome.FAILED: "failed on the base",
            AttemptOutcome.ERROR: f"error in {record.failed_phase or 'setup'} on the base",
            AttemptOutcome.CRASHED: "crashed on the base",
        }[failed[0]]
        return BaseCheck("fails", commit, what)
    if AttemptOutcome.PASSED in outcomes:
        return BaseCheck("passes", commit, "passed on the base")
    skipped = next((r for r in records if r.outcome == AttemptOutcome.SKIPPED), records[0])
    reason = next((p.longrepr for p in skipped.phases if p.outcome == "skipped"), "")
    if any(p.wasxfail for p in skipped.phases):
        return BaseCheck("fails", commit, "failed on the base, where it is marked xfail")
    return BaseCheck("error", commit, one_line(f"skipped on the base: {reason or 'no reason'}"))


def _missing_check(
    test_id: str, results: ProcessResults, ended: Ended, running: set[str], commit: str
) -> BaseCheck:
    """The verdict of a test the base's process wrote no record of."""
    if ended.timed_out:
        done = "while it ran" if test_id in running else "before it ran"
        why = f"timed out on the base after {ended.timeout:g} seconds, {done}"
        return BaseCheck("error", commit, why)
    if results.config is None:
        why = (
            f"the command did not start pytest on the base (exit code {ended.exit_code}); "
            f"see {ended.log}"
        )
        return BaseCheck("error", commit, one_line(why))
    if results.exitstatus is None:
        done = "while it ran" if test_id in running else "before it ran"
        why = f"the test process died on the base {done} (exit code {ended.exit_code})"
        return BaseCheck("error", commit, why)
    collected = results.collected or []
    file = test_id.split("::", 1)[0]
    for where, text in results.collect_errors:
        if where and (where == file or test_id.startswith(f"{where}::")):
            return BaseCheck(
                "error",
                commit,
                one_line(f"{where} does not collect on the base: {_last_line(text)}"),
            )
    if test_id in collected:
        why = f"collected on the base but not run (pytest's exit status {results.exitstatus})"
        return BaseCheck("error", commit, why)
    if results.exitstatus in (2, 3, 4):
        why = f"pytest stopped on the base before collecting it (exit status {results.exitstatus})"
        return BaseCheck("error", commit, why)
    return BaseCheck("error", commit, NOT_AT_BASE)


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "a collection error"


def verdicts(
    test_ids: Sequence[str],
    results: ProcessResults,
    ended: Ended,
    commit: str,
    *,
    foreign: Optional[str] = None,
) -> dict[str, BaseCheck]:
    """Each test's verdict from the base's one process; ``foreign`` (what it imported from
    the pull request's checkout) makes every verdict ``error``."""
    if foreign is not None:
        return {test_id: BaseCheck("error", commit, foreign) for test_id in test_ids}
    by_id = results.by_id()
    running = {start.id for start in results.running}
    checks: dict[str, BaseCheck] = {}
    for test_id in test_ids:
        records = by_id.get(test_id)
        if records:
            checks[test_id] = _record_check(records, commit)
        else:
            checks[test_id] = _missing_check(test_id, results, ended, running, commit)
    return checks
