"""Reconciling the issues that jobs running at once opened for the same flaky test.

Each job lists, creates, then lists again: the lowest number wins. GitHub has no
compare-and-swap on issue bodies, so the count is made exact without one:

1. a loser closes its own issue first (only its creator writes it while it is
   new), recording ``duplicate_of`` and its hits there: the hit is durable;
2. it then adopts into the winner every closed duplicate not yet listed in the
   winner's ``merged`` (keyed by issue number, so each is counted once, and
   ``hits`` and ``merged`` always change in the same write);
3. after each write it reads the winner and lists the duplicates again, and
   writes again until all of them are in ``merged``.

A write that lands late and overwrites a newer merge is repaired by its own
writer's check (which runs after every duplicate was closed), and any later
recurrence adopts what is still missing. What remains: a plain recurrence
(+1 without a merge) from a different run landing in the same instant as a
merge can still be overwritten, as with any read-modify-write of an issue body.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from flakewarden.errors import GitHubError
from flakewarden.github.marker import hits_of, key_of

if TYPE_CHECKING:
    from flakewarden.github.flake_issues import FlakeTracker
    from flakewarden.github.flake_records import Filed, FlakeIssue, RunContext

# Issues another job may have created while we were listing: updated this recently.
DEDUP_WINDOW = dt.timedelta(minutes=10)
# Rounds of "read, adopt, write" one job does before it gives up on a merge.
SETTLE_ROUNDS = 8


def _iso(moment: dt.datetime) -> str:
    return moment.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def duplicates_of(issues: Iterable[FlakeIssue], winner: int) -> dict[int, dict[str, Any]]:
    """The closed issues recorded as duplicates of ``winner``, by number (sound markers only)."""
    return {
        issue.number: issue.marker
        for issue in issues
        if issue.state == "closed"
        and issue.marker.get("duplicate_of") == winner
        and issue.number != winner
        and not issue.problem
    }


def adopt(marker: dict[str, Any], duplicates: Mapping[int, Mapping[str, Any]]) -> list[int]:
    """Add to ``marker`` the hits of every duplicate it does not list in ``merged`` yet.

    Returns the numbers adopted; idempotent, because ``merged`` says what is counted.
    """
    merged = [int(n) for n in marker.get("merged") or []]
    new = [n for n in sorted(duplicates) if n not in merged]
    if not new:
        return []
    marker["hits"] = hits_of(marker) + sum(hits_of(dict(duplicates[n])) for n in new)
    for key, pick in (("first", min), ("last", max)):
        values = [str(v) for v in (marker.get(key), *(duplicates[n].get(key) for n in new)) if v]
        if values:
            marker[key] = pick(values)
    marker["merged"] = merged + new
    return new


def settle(
    tracker: FlakeTracker,
    winner: int,
    key: str,
    now: dt.datetime,
    known: Mapping[int, Mapping[str, Any]],
) -> FlakeIssue:
    """Write the winner until its ``merged`` holds every closed duplicate; return it."""
    from flakewarden.github.flake_records import MalformedMarker

    since = _iso(now - DEDUP_WINDOW)
    for _ in range(SETTLE_ROUNDS):
        fresh = tracker.get(winner)
        if fresh.problem:
            raise MalformedMarker(winner, fresh.problem)
        listed = tracker.index(state="closed", since=since).get(key, [])
        duplicates = {**duplicates_of(listed, winner), **known}
        marker = dict(fresh.marker)
        if not adopt(marker, duplicates):
            return fresh
        marker.pop("from_title", None)
        fresh = tracker.update(fresh, marker)
    raise GitHubError(
        f"could not record the duplicates {sorted(known)} as merged into #{winner}: "
        "other jobs kept rewriting it; the next run that sees this flake adds them"
    )


def absorb(
    tracker: FlakeTracker,
    loser: FlakeIssue,
    winner: int,
    key: str,
    ctx: RunContext,
    now: dt.datetime,
) -> int:
    """Close ``loser`` as a duplicate of ``winner``, see its hits counted there; winner's hits."""
    from flakewarden.github.flake_records import MalformedMarker

    if loser.problem:
        raise MalformedMarker(loser.number, loser.problem)
    marker = {**loser.marker, "duplicate_of": winner}
    marker.pop("from_title", None)
    tracker.update(loser, marker, state="closed", state_reason="not_planned")
    merged = settle(tracker, winner, key, now, {loser.number: marker})
    hits = hits_of(loser.marker)
    tracker.comment(
        winner,
        f"Also flaked in {ctx.describe()}: that job filed #{loser.number} at the same "
        f"moment, now closed as a duplicate; its {hits} hit(s) are counted here.\n",
    )
    tracker.comment(
        loser.number,
        f"Duplicate of #{winner}: jobs filed this flake at the same moment and "
        "the lowest issue number is kept. Hits were added there.\n",
    )
    return hits_of(merged.marker)


def dedup(
    tracker: FlakeTracker,
    created: Mapping[str, tuple[str, FlakeIssue]],
    ctx: RunContext,
    now: dt.datetime,
    filed: list[Filed],
) -> None:
    """List again; where another job filed the same test too, keep the lowest number."""
    fresh = tracker.index(state="open", since=_iso(now - DEDUP_WINDOW))
    for key, (test_id, mine) in created.items():
        numbers = {i.number: i for i in fresh.get(key, []) if key_of(i.marker) == key}
        numbers.setdefault(mine.number, mine)
        winner = min(numbers)
        if winner == mine.number:
            continue
        hits = absorb(tracker, mine, winner, key, ctx, now)
        for entry in filed:
            if entry.test_id == test_id and entry.number == mine.number:
                entry.action, entry.number = "merged", winner
                entry.url, entry.hits = numbers[winner].html_url, hits
