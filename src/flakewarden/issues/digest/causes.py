"""The digest's causes: each storm's cause issue ranked apart from the test issues.

A cause issue (``issues/cause_issues.py``) is one thing that failed many tests; the digest
ranks those by the tests they hit, then the runs they hit, says when one has not been seen
for a week (it stopped), and shows the environment's causes in their own section with
their share of all the hits recorded (each hit a run that needed a rerun). Given a flake
history, each cause's trend compares the runs it hit in the window with the window before.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Optional

from flakewarden.issues.marker import parse_time
from flakewarden.reports import markdown as md

if TYPE_CHECKING:
    from flakewarden.issues.digest.ranking import Entry

CAUSE_PREFIX = "cause:"
#: A cause not seen for this long has stopped appearing.
STOPPED_AFTER = dt.timedelta(days=7)


def split(entries: Sequence[Entry]) -> tuple[list[Entry], list[Entry]]:
    """(the cause issues, the test issues), each in the order given."""
    causes = [e for e in entries if e.test_id.startswith(CAUSE_PREFIX)]
    return causes, [e for e in entries if not e.test_id.startswith(CAUSE_PREFIX)]


def tests_of(entry: Entry) -> int:
    tests = entry.marker.get("tests")
    return len(tests) if isinstance(tests, list) else 0


def _state(entry: Entry, now: dt.datetime) -> str:
    last = parse_time(entry.last)
    if last is None:
        return "?"
    seen = md.escape(entry.last[:10])
    if now - last > STOPPED_AFTER:
        return f"stopped: not seen since {seen}"
    return f"active: last seen {seen}"


def trends(
    current: Sequence[str], previous: Sequence[str], hits: Mapping[str, set[str]]
) -> dict[str, str]:
    """Each cause's trend in words: the share of the window's runs (``current``, by key) it
    hit against the share of the window before's (``previous``); ``hits`` by cause id."""
    now_runs, then_runs = set(current), set(previous)
    found = {}
    for cause, runs in hits.items():
        now, then = len(runs & now_runs), len(runs & then_runs)
        if not now and not then:
            continue
        said = f"{now} of {len(now_runs)} runs"
        if not then_runs:
            found[cause] = f"{said}; no window before"
        elif not now:
            found[cause] = f"stopped: {said}, {then} of {len(then_runs)} before"
        else:
            rate, before = now / len(now_runs), then / len(then_runs)
            word = "rising" if rate > before else "falling" if rate < before else "steady"
            found[cause] = f"{word}: {said}, {then} of {len(then_runs)} before"
    return found


def _table(
    causes: Sequence[Entry], now: dt.datetime, trend: Optional[Mapping[str, str]]
) -> list[str]:
    header = ["#", "Cause", "Tests", "Runs hit", "Seen"]
    header += ["Trend (the history's window)"] if trend is not None else []
    lines = ["| " + " | ".join([*header, "Issue"]) + " |", "|" + " --- |" * (len(header) + 1)]
    for n, entry in enumerate(causes, start=1):
        name = str(entry.marker.get("cause") or entry.test_id)
        hits = "?" if entry.problem else str(entry.hits)
        row = [str(n), md.table_code(md.clip(name, 200)), str(tests_of(entry)), hits]
        row.append(_state(entry, now))
        if trend is not None:
            row.append(trend.get(entry.test_id.removeprefix(CAUSE_PREFIX), "not in the window"))
        lines.append("| " + " | ".join([*row, f"#{entry.number}"]) + " |")
    return lines


def render(
    causes: Sequence[Entry],
    total_hits: int,
    now: dt.datetime,
    trend: Optional[Mapping[str, str]] = None,
) -> list[str]:
    """The causes' sections (none when there is no cause issue); ``trend`` by cause id, from
    a flake history (``trends``), adds a column."""
    if not causes:
        return []
    ranked = sorted(causes, key=lambda e: (-tests_of(e), -e.hits, e.number))
    own = [e for e in ranked if e.marker.get("environment") is not True]
    outside = [e for e in ranked if e.marker.get("environment") is True]
    lines: list[str] = []
    if own:
        lines += [
            "### Causes",
            "",
            "One issue per cause that failed many tests at once, ranked by the tests it hit, "
            "then the runs it hit.",
            "",
            *_table(own, now, trend),
            "",
        ]
    if outside:
        hits = sum(e.hits for e in outside if not e.problem)
        share = f"{hits / total_hits:.0%}" if total_hits else "0%"
        lines += [
            "### The environment",
            "",
            f"Causes of the environment's, not of the tests: {hits} of the {total_hits} hits "
            f"recorded ({share}; each hit a run that needed a rerun). Their tests' flake rates "
            "do not count them.",
            "",
            *_table(outside, now, trend),
            "",
        ]
    return lines
