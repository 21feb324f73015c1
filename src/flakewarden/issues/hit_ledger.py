"""A flake's hits, counted from an append-only record rather than added to a number.

GitHub has no compare-and-set on an issue body: two jobs writing ``hits + 1``
at the same moment lose one. So every run that saw the flake leaves a record
that is written once and never edited: its recurrence comment carries a
hidden line naming the run's evidence key (``RunReport.evidence_key``), and
the job that opens the issue names its key in the marker (``origin``). The
hits are the distinct keys recorded, so a report published twice (a re-run
merge job, a retried step) counts once.

The marker's ``hits`` is a cache that every writer recomputes and checks
after writing. ``ledger`` is a checkpoint that keeps the recount at O(1)
requests however many hits there are: ``count`` hits were recorded before the
moment ``before`` (``None``: count from the first comment), and ``edge`` holds
the keys recorded in the minutes before it, so a key recorded again after it
is still counted once. A writer moves the checkpoint only to ``SETTLED``
before a record it has just made itself (GitHub's clock, not the runner's),
so every record older than that was visible to the listing that counted it.
Each writer's checkpoint is right on its own: a write lost to another job
loses no hit, the next writer recounts.

Only records by the issue's author (the filer), by GitHub Actions, or by the
repository's owners, members and collaborators are counted: a drive-by
comment holding a record line counts nothing.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, Optional

from flakewarden.issues.marker import HITS_MAX, hits_of, parse_time, valid_key

if TYPE_CHECKING:
    from flakewarden.issues.records import FlakeIssue
    from flakewarden.issues.tracker import FlakeTracker

PREFIX = "<!-- flakewarden-hit: "
_LINE = re.compile(r"^[ \t]*<!-- flakewarden-hit: (\{.*\}) -->[ \t]*$", re.MULTILINE)
# A record this old is visible to every listing of the issue's comments.
SETTLED = dt.timedelta(minutes=10)
# Keys recorded this long before a checkpoint are kept by name, to count a repeat once.
EDGE = dt.timedelta(minutes=10)
# Rounds of "write the recount, read it back" before a writer leaves the rest to the next.
ROUNDS = 4
TRUSTED = frozenset({"OWNER", "MEMBER", "COLLABORATOR"})
ACTIONS_BOT = "github-actions[bot]"


class Evidence(NamedTuple):
    """The run a flake was seen in: its key, and a moment before any record of it."""

    key: str
    not_before: str  # ISO 8601; no record of ``key`` can be older


def record_line(keys: Mapping[str, int]) -> str:
    """The hidden line that records ``keys``, each worth its number of hits (no newline).

    A key is worth 1 hit, except one that carries the count of an issue merged from a
    version that kept hits in its marker only.
    """
    plain = sorted(k for k, n in keys.items() if n == 1)
    data: dict[str, Any] = {"keys": plain}
    weighted = {k: n for k, n in sorted(keys.items()) if n != 1}
    if weighted:
        data["weights"] = weighted
    return PREFIX + json.dumps(data, separators=(", ", ": ")) + " -->"


def record_keys(body: Any) -> dict[str, int]:
    """The keys a comment body records and their hits: those of its first good record line."""
    for match in _LINE.finditer(body if isinstance(body, str) else ""):
        try:
            data = json.loads(match.group(1))
        except (ValueError, RecursionError):
            continue
        if not isinstance(data, dict):
            continue
        keys = data.get("keys")
        weights = data.get("weights") or {}
        if not (isinstance(keys, list) and all(valid_key(k) for k in keys)):
            continue
        if not (isinstance(weights, dict) and all(_weight(k, n) for k, n in weights.items())):
            continue
        found = {str(k): 1 for k in keys}
        found.update({str(k): int(n) for k, n in weights.items()})
        if found:
            return found
    return {}


def _weight(key: Any, hits: Any) -> bool:
    return (
        valid_key(key)
        and isinstance(hits, int)
        and not isinstance(hits, bool)
        and (0 < hits <= HITS_MAX)
    )


def iso(moment: dt.datetime) -> str:
    return moment.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclasses.dataclass(frozen=True)
class Record:
    at: dt.datetime
    keys: Mapping[str, int]  # key -> the hits it is worth (1, but for a merged old count)


def _sum(keys: Mapping[str, int], leave_out: frozenset[str]) -> int:
    return sum(n for k, n in keys.items() if k not in leave_out)


def union(records: Iterable[Record]) -> dict[str, int]:
    found: dict[str, int] = {}
    for r in records:
        for k, n in r.keys.items():
            found[k] = max(n, found.get(k, 0))
    return found


@dataclasses.dataclass(frozen=True)
class Checkpoint:
    before: Optional[dt.datetime]  # None: every record counts
    count: int
    edge: frozenset[str] = frozenset()

    @classmethod
    def of(cls, marker: Mapping[str, Any]) -> Checkpoint:
        """The marker's checkpoint; a marker with none (edited by hand) starts one at its hits."""
        ledger = marker.get("ledger")
        if not isinstance(ledger, Mapping):
            return cls(None, hits_of(dict(marker)))
        return cls(
            parse_time(ledger.get("before")),
            int(ledger.get("count") or 0),
            frozenset(str(k) for k in ledger.get("edge") or ()),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "before": None if self.before is None else iso(self.before),
            "count": self.count,
            "edge": sorted(self.edge),
        }

    def counts(self, record: Record) -> bool:
        return self.before is None or record.at >= self.before

    def hits(self, records: Iterable[Record]) -> int:
        """The hits: those before the checkpoint, and each key recorded since, once."""
        keys = union(r for r in records if self.counts(r))
        return min(HITS_MAX, self.count + _sum(keys, self.edge))

    def moved_to(self, to: dt.datetime, records: Iterable[Record]) -> Checkpoint:
        """The checkpoint at ``to``, all of ``records`` (every record before ``to``) counted."""
        if self.before is not None and to <= self.before:
            return self
        records = list(records)
        counted = union(r for r in records if self.counts(r) and r.at < to)
        edge = {k for r in records if to - EDGE <= r.at < to for k in r.keys}
        if self.before is not None and self.before > to - EDGE:
            edge |= self.edge
        total = min(HITS_MAX, self.count + _sum(counted, self.edge))
        return Checkpoint(to, total, frozenset(edge))


def trusted(comment: Mapping[str, Any], author: str) -> bool:
    user = comment.get("user")
    login = str(user.get("login") or "") if isinstance(user, Mapping) else ""
    return (bool(login) and login in (author, ACTIONS_BOT)) or comment.get(
        "author_association"
    ) in TRUSTED


def records_of(issue: FlakeIssue, comments: Iterable[Mapping[str, Any]]) -> list[Record]:
    """The records of ``issue``: its origin, then every trusted comment's."""
    found: list[Record] = []
    origin = issue.marker.get("origin")
    created = parse_time(issue.created_at)
    if valid_key(origin) and created is not None:
        found.append(Record(created, {str(origin): 1}))
    for comment in comments:
        keys = record_keys(comment.get("body"))
        at = parse_time(comment.get("created_at"))
        if keys and at is not None and trusted(comment, issue.author):
            found.append(Record(at, keys))
    return found


def _earliest(*moments: Optional[dt.datetime]) -> Optional[dt.datetime]:
    known = [m for m in moments if m is not None]
    return min(known) if len(known) == len(moments) else None


def record(
    tracker: FlakeTracker,
    issue: FlakeIssue,
    keys: Mapping[str, int],
    text: Callable[[int], str],
    not_before: Optional[str] = None,
    change: Optional[Callable[[dict[str, Any]], None]] = None,
    **fields: Any,
) -> tuple[FlakeIssue, int, bool]:
    """Record ``keys`` on ``issue`` (a comment ``text(hits)`` unless all are recorded), then
    write the recounted hits, ``change`` and ``fields`` (e.g. ``state``).

    Returns the issue as written, its hits, and whether any key was new.

    ``issue`` must have been read just now (``tracker.get``). The listing reaches back
    to ``not_before`` too, so a key recorded before the checkpoint is found and not
    recorded again.
    """
    checkpoint = Checkpoint.of(issue.marker)
    since = _earliest(checkpoint.before, parse_time(not_before))
    records = records_of(issue, tracker.comments(issue.number, iso(since) if since else None))
    seen = {k for r in records for k in r.keys}
    new = {k: n for k, n in keys.items() if valid_key(k) and n > 0}
    new = {k: n for k, n in new.items() if k not in seen and k not in checkpoint.edge}
    posted: Optional[dt.datetime] = None
    if new:
        hits = checkpoint.hits(records) + sum(new.values())
        comment = tracker.comment(issue.number, text(hits).rstrip("\n") + "\n\n" + record_line(new))
        posted = parse_time(comment.get("created_at"))
        if posted is not None:
            records.append(Record(posted, new))
    issue, hits = settle(tracker, issue, records, posted, change, **fields)
    return issue, hits, bool(new)


def settle(
    tracker: FlakeTracker,
    issue: FlakeIssue,
    records: list[Record],
    posted: Optional[dt.datetime] = None,
    change: Optional[Callable[[dict[str, Any]], None]] = None,
    **fields: Any,
) -> tuple[FlakeIssue, int]:
    """Write the recount into the marker and read it back until it holds (``ROUNDS``)."""
    marker = dict(issue.marker)
    hits = 0
    for round_ in range(ROUNDS):
        checkpoint = Checkpoint.of(marker)
        hits = checkpoint.hits(records)
        if posted is not None:
            checkpoint = checkpoint.moved_to(posted - SETTLED, records)
        wanted = {**marker, "hits": hits, "ledger": checkpoint.to_json()}
        wanted.pop("from_title", None)
        if change is not None and round_ == 0:
            change(wanted)
        if wanted != marker or fields:
            issue = tracker.update(issue, wanted, **fields)
        fields = {}
        # Read back: another job may have written an older count over this one.
        issue = tracker.get(issue.number)
        marker = dict(issue.marker)
        since = Checkpoint.of(marker).before
        records = records_of(issue, tracker.comments(issue.number, iso(since) if since else None))
        if hits_of(marker) == Checkpoint.of(marker).hits(records) and "ledger" in marker:
            return issue, hits_of(marker)
    return issue, hits
