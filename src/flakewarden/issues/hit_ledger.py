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

A record also says, for a key whose run judged the test against a pull request's
change (blame), whether that run's failure ran the change (``touches``) or none
of it (``untouched``). Those are counted like the hits, per distinct key, into
the marker's ``untouched`` and ``touches`` (and the checkpoint's), so the share
of hits that ran none of the change they were tested with is as exact as the
hits. A marker or record without them counts 0 known.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, Optional

from flakewarden.issues.marker import HITS_MAX, count_of, hits_of, parse_time, valid_key
from flakewarden.outside_json import parse_json

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


#: The change verdicts a record counts (``unknown`` is a hit with nothing known).
VERDICTS = ("untouched", "touches")
#: The marker key that says how the origin's run judged the test.
ORIGIN_VERDICT = "origin_change"


class Tally(NamedTuple):
    """An issue's hits, and how many of them ran none of their change, or some of it."""

    hits: int
    untouched: int = 0
    touches: int = 0

    @property
    def judged(self) -> int:
        """The hits whose run judged the test against a change, either way."""
        return self.untouched + self.touches


def tally_of(marker: Mapping[str, Any]) -> Tally:
    """The counts a checked marker caches (0 for each it lacks: an older issue)."""
    data = dict(marker)
    return Tally(hits_of(data), count_of(data, "untouched"), count_of(data, "touches"))


class Evidence(NamedTuple):
    """The run a flake was seen in: its key, and a moment before any record of it."""

    key: str
    not_before: str  # ISO 8601; no record of ``key`` can be older


def record_line(keys: Mapping[str, int], verdicts: Optional[Mapping[str, str]] = None) -> str:
    """The hidden line that records ``keys``, each worth its number of hits (no newline).

    A key is worth 1 hit, except one that carries the count of an issue merged from a
    version that kept hits in its marker only. ``verdicts`` lists, under ``untouched``
    and ``touches``, the keys whose run judged the test against a change.
    """
    plain = sorted(k for k, n in keys.items() if n == 1)
    data: dict[str, Any] = {"keys": plain}
    weighted = {k: n for k, n in sorted(keys.items()) if n != 1}
    if weighted:
        data["weights"] = weighted
    for verdict in VERDICTS:
        judged = sorted(k for k, v in (verdicts or {}).items() if v == verdict and k in keys)
        if judged:
            data[verdict] = judged
    return PREFIX + json.dumps(data, separators=(", ", ": ")) + " -->"


def record_keys(body: Any) -> dict[str, int]:
    """The keys a comment body records and their hits: those of its first good record line."""
    return record_of(body)[0]


def record_of(body: Any) -> tuple[dict[str, int], dict[str, str]]:
    """The keys of a comment body's first good record line, and their change verdicts.

    A verdict list that is not a list of the line's own keys is left out: the hits count
    as before, with nothing known of their change.
    """
    for match in _LINE.finditer(body if isinstance(body, str) else ""):
        try:
            data = parse_json(match.group(1), "the hit ledger")
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
            return found, _verdicts(data, found)
    return {}, {}


def _verdicts(data: Mapping[str, Any], keys: Mapping[str, int]) -> dict[str, str]:
    verdicts: dict[str, str] = {}
    for verdict in VERDICTS:
        listed = data.get(verdict)
        if isinstance(listed, list) and all(isinstance(k, str) and k in keys for k in listed):
            for key in listed:
                verdicts.setdefault(key, verdict)
    return verdicts


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
    verdicts: Mapping[str, str] = dataclasses.field(default_factory=dict)  # key -> VERDICTS


def verdicts_of(records: Iterable[Record]) -> dict[str, str]:
    """Each key's change verdict, as the first record that names one says."""
    found: dict[str, str] = {}
    for r in records:
        for k, v in r.verdicts.items():
            found.setdefault(k, v)
    return found


def _judged(keys: Mapping[str, int], verdicts: Mapping[str, str], verdict: str) -> int:
    return sum(n for k, n in keys.items() if verdicts.get(k) == verdict)


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
    untouched: int = 0  # of ``count``, the hits that ran none of their change
    touches: int = 0  # and those that ran some of it

    @classmethod
    def of(cls, marker: Mapping[str, Any]) -> Checkpoint:
        """The marker's checkpoint; a marker with none (edited by hand) starts one at its hits."""
        ledger = marker.get("ledger")
        if not isinstance(ledger, Mapping):
            cached = tally_of(marker)
            return cls(None, cached.hits, untouched=cached.untouched, touches=cached.touches)
        return cls(
            parse_time(ledger.get("before")),
            int(ledger.get("count") or 0),
            frozenset(str(k) for k in ledger.get("edge") or ()),
            count_of(dict(ledger), "untouched"),
            count_of(dict(ledger), "touches"),
        )

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "before": None if self.before is None else iso(self.before),
            "count": self.count,
            "edge": sorted(self.edge),
        }
        if self.untouched or self.touches:
            data.update(untouched=self.untouched, touches=self.touches)
        return data

    def counts(self, record: Record) -> bool:
        return self.before is None or record.at >= self.before

    def hits(self, records: Iterable[Record]) -> int:
        """The hits: those before the checkpoint, and each key recorded since, once."""
        return self.tally(records).hits

    def tally(self, records: Iterable[Record]) -> Tally:
        """The hits (see ``hits``), and of them the untouched and touching ones, alike."""
        records = list(records)
        counted = [r for r in records if self.counts(r)]
        keys = {k: n for k, n in union(counted).items() if k not in self.edge}
        verdicts = verdicts_of(counted)
        return Tally(
            min(HITS_MAX, self.count + sum(keys.values())),
            min(HITS_MAX, self.untouched + _judged(keys, verdicts, "untouched")),
            min(HITS_MAX, self.touches + _judged(keys, verdicts, "touches")),
        )

    def moved_to(self, to: dt.datetime, records: Iterable[Record]) -> Checkpoint:
        """The checkpoint at ``to``, all of ``records`` (every record before ``to``) counted."""
        if self.before is not None and to <= self.before:
            return self
        records = list(records)
        counted = union(r for r in records if self.counts(r) and r.at < to)
        edge = {k for r in records if to - EDGE <= r.at < to for k in r.keys}
        if self.before is not None and self.before > to - EDGE:
            edge |= self.edge
        kept = {k: n for k, n in counted.items() if k not in self.edge}
        verdicts = verdicts_of(r for r in records if self.counts(r) and r.at < to)
        return Checkpoint(
            to,
            min(HITS_MAX, self.count + sum(kept.values())),
            frozenset(edge),
            min(HITS_MAX, self.untouched + _judged(kept, verdicts, "untouched")),
            min(HITS_MAX, self.touches + _judged(kept, verdicts, "touches")),
        )


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
        verdict = issue.marker.get(ORIGIN_VERDICT)
        judged = {str(origin): verdict} if verdict in VERDICTS else {}
        found.append(Record(created, {str(origin): 1}, judged))
    for comment in comments:
        keys, verdicts = record_of(comment.get("body"))
        at = parse_time(comment.get("created_at"))
        if keys and at is not None and trusted(comment, issue.author):
            found.append(Record(at, keys, verdicts))
    return found


def _earliest(*moments: Optional[dt.datetime]) -> Optional[dt.datetime]:
    known = [m for m in moments if m is not None]
    return min(known) if len(known) == len(moments) else None


def record(
    tracker: FlakeTracker,
    issue: FlakeIssue,
    keys: Mapping[str, int],
    text: Callable[[Tally], str],
    not_before: Optional[str] = None,
    change: Optional[Callable[[dict[str, Any]], None]] = None,
    verdicts: Optional[Mapping[str, str]] = None,
    **fields: Any,
) -> tuple[FlakeIssue, int, bool]:
    """Record ``keys`` on ``issue`` (a comment ``text(tally)`` unless all are recorded), then
    write the recounted hits, ``change`` and ``fields`` (e.g. ``state``).

    ``verdicts`` says, for a key whose run judged the test against a change, whether it
    ran that change (``VERDICTS``). Returns the issue as written, its hits, and whether
    any key was new.

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
        judged = {k: v for k, v in (verdicts or {}).items() if k in new and v in VERDICTS}
        so_far = checkpoint.tally(records)
        tally = Tally(
            so_far.hits + sum(new.values()),
            so_far.untouched + _judged(new, judged, "untouched"),
            so_far.touches + _judged(new, judged, "touches"),
        )
        line = record_line(new, judged)
        comment = tracker.comment(issue.number, text(tally).rstrip("\n") + "\n\n" + line)
        posted = parse_time(comment.get("created_at"))
        if posted is not None:
            records.append(Record(posted, new, judged))
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
        tally = checkpoint.tally(records)
        hits = tally.hits
        if posted is not None:
            checkpoint = checkpoint.moved_to(posted - SETTLED, records)
        wanted = {**marker, "hits": hits, "ledger": checkpoint.to_json()}
        if tally.judged or "untouched" in marker or "touches" in marker:
            wanted.update(untouched=tally.untouched, touches=tally.touches)
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
        if tally_of(marker) == Checkpoint.of(marker).tally(records) and "ledger" in marker:
            return issue, hits_of(marker)
    return issue, hits
