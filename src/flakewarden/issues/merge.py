"""Reconciling the issues that jobs running at once opened for the same flaky test.

Each job lists, creates, then lists again: the lowest number wins. A loser first
records its hits on the winner (its issue's origin and every record on it, in
one record comment; keys recorded there already are left out), then closes its
own issue as ``duplicate_of`` the winner. No job adds to a number, so no write
can be lost: the winner's hits are recounted from its records (``hit_ledger``).
A job that dies between the two steps leaves its issue open, and the next run
that sees the flake finishes the merge; the keys make that safe to repeat.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping

from flakewarden.issues.hit_ledger import (
    Checkpoint,
    Record,
    Tally,
    iso,
    record,
    records_of,
    union,
    verdicts_of,
)
from flakewarden.issues.marker import key_of, parse_time
from flakewarden.issues.records import Filed, FlakeIssue, MalformedMarker, RunContext
from flakewarden.issues.tracker import FlakeTracker

# Issues another job may have created while we were listing: updated this recently.
DEDUP_WINDOW = dt.timedelta(minutes=10)
# How far a record's key may predate the record itself (a report published late).
KEY_SLACK = dt.timedelta(hours=1)
# Duplicates of duplicates followed before giving up (each hop is a job that lost a race).
HOPS = 4


def absorb(
    tracker: FlakeTracker, loser: FlakeIssue, winner: int, ctx: RunContext
) -> tuple[FlakeIssue, int]:
    """Record ``loser``'s hits on ``winner``, then close it as a duplicate; the winner, hits."""
    if loser.problem:
        raise MalformedMarker(loser.number, loser.problem)
    held = records_of(loser, tracker.comments(loser.number))
    keys = _held(loser, held)
    target = tracker.get(winner)
    if target.problem:
        raise MalformedMarker(winner, target.problem)
    oldest = parse_time(loser.created_at)  # every record on it is younger
    target, hits, _ = record(
        tracker,
        target,
        keys,
        lambda _hits: (
            f"Also flaked in {ctx.describe()}: that job filed #{loser.number} at the same "
            "moment, now closed as a duplicate; its hits are counted here.\n"
        ),
        not_before=None if oldest is None else iso(oldest - KEY_SLACK),
        verdicts=verdicts_of(held),
    )
    target, hits = forward(tracker, target, hits, keys)
    marker = {**loser.marker, "duplicate_of": target.number}
    marker.pop("from_title", None)
    tracker.update(loser, marker, state="closed", state_reason="not_planned")
    # A record another job left on the loser while it was being closed goes along too.
    held = records_of(loser, tracker.comments(loser.number))
    late = {k: n for k, n in _held(loser, held).items() if k not in keys}
    if late:
        target, hits, _ = record(
            tracker,
            tracker.get(target.number),
            late,
            _moved(loser.number),
            None,
            None,
            verdicts_of(held),
        )
    tracker.comment(
        loser.number,
        f"Duplicate of #{target.number}: jobs filed this flake at the same moment and "
        "the lowest issue number is kept. Hits were added there.\n",
    )
    return target, hits


def _held(issue: FlakeIssue, records: list[Record]) -> dict[str, int]:
    """What ``issue`` holds, as keys to record elsewhere: its records, and its count from
    before them (a checkpoint's, or an old marker's hits) under a key of its own."""
    checkpoint = Checkpoint.of(issue.marker)
    keys = union(r for r in records if checkpoint.counts(r))
    if checkpoint.count:
        keys[f"issue-{issue.number}-before"] = checkpoint.count
    return {k: n for k, n in keys.items() if k not in checkpoint.edge}


def _moved(number: int) -> Callable[[Tally], str]:
    return lambda _hits: f"Hits recorded on #{number} after it was merged into this issue.\n"


def forward(
    tracker: FlakeTracker, issue: FlakeIssue, hits: int, keys: Mapping[str, int]
) -> tuple[FlakeIssue, int]:
    """Follow ``issue`` while another job closes it as a duplicate, recording ``keys`` there.

    Whoever is later sees the other: a job that recorded on an issue being merged
    either finds it closed here, or its record was there for the merger's last look.
    """
    for _ in range(HOPS):
        winner = issue.marker.get("duplicate_of")
        if issue.state != "closed" or not isinstance(winner, int) or winner == issue.number:
            break
        target = tracker.get(winner)
        if target.problem:
            raise MalformedMarker(winner, target.problem)
        issue, hits, _ = record(tracker, target, keys, _moved(issue.number))
    return issue, hits


def dedup(
    tracker: FlakeTracker,
    created: Mapping[str, tuple[str, FlakeIssue]],
    ctx: RunContext,
    now: dt.datetime,
    filed: list[Filed],
) -> None:
    """List again; where another job filed the same test too, keep the lowest number."""
    fresh = tracker.index(state="open", since=iso(now - DEDUP_WINDOW))
    for key, (test_id, mine) in created.items():
        numbers = {i.number: i for i in fresh.get(key, []) if key_of(i.marker) == key}
        numbers.setdefault(mine.number, mine)
        winner = min(numbers)
        if winner == mine.number:
            continue
        target, hits = absorb(tracker, mine, winner, ctx)
        for entry in filed:
            if entry.test_id == test_id and entry.number == mine.number:
                entry.action, entry.number = "merged", winner
                entry.url, entry.hits = target.html_url or numbers[winner].html_url, hits
