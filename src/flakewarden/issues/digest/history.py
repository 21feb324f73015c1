"""The digest's ranking when a flake history is given: impact over a window, with a trend.

Ranked by flaky runs in the window (how many builds a flake cost, not how
often an issue was touched), then rate; each row shows the rate with its exact
95% interval, the runs it rests on, and the trend against the previous window
of the same size. Tests whose first failure of the window is under a week old,
with none in the previous window, are listed apart as new this week. Every test
id is escaped into a code span: no id can form a link, a mention or a table.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Optional

from flakewarden.issues.digest import causes as digest_causes
from flakewarden.issues.records import iso
from flakewarden.model import id_key
from flakewarden.model.scores import TestScore
from flakewarden.reports import markdown as md

NEW_DAYS = 7
NEW_ROWS = 20


@dataclasses.dataclass(frozen=True)
class HistoryDigest:
    """Every test's score over one window, and that window in words."""

    window: str
    scores: Sequence[TestScore]
    # Each cause's trend in words by cause id (``causes.trends``): this window against the last.
    cause_trends: Mapping[str, str] = dataclasses.field(default_factory=dict)


def ranked(scores: Iterable[TestScore]) -> list[TestScore]:
    """The tests that failed a first attempt in the window: most flaky runs, then rate, id."""
    failing = [s for s in scores if s.first_attempt_failures > 0]
    return sorted(failing, key=lambda s: (-s.flaky_runs, -s.rate, -s.hard_failures, s.test_id))


def _moment(stamp: str) -> Optional[dt.datetime]:
    try:
        moment = dt.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.timezone.utc)


def new_this_week(scores: Iterable[TestScore], now: dt.datetime) -> list[TestScore]:
    """Flaky runs in the window, the first failure under a week old, none the window before."""
    since = now - dt.timedelta(days=NEW_DAYS)
    found = []
    for s in scores:
        first = _moment(s.first_failure) if s.first_failure else None
        before = s.previous.first_attempt_failures if s.previous is not None else 0
        if s.flaky_runs and first is not None and first >= since and before == 0:
            found.append(s)
    return sorted(found, key=lambda s: (s.first_failure, s.test_id), reverse=True)


def trend(score: TestScore) -> str:
    """This window's rate against the previous window's: ``↑ from 2.0%``, ``↓``, ``=``."""
    prev = score.previous
    if prev is None or prev.runs == 0:
        return "new"
    if score.rate > prev.rate:
        return f"↑ from {prev.rate:.1%}"
    if score.rate < prev.rate:
        return f"↓ from {prev.rate:.1%}"
    return "="


def _rate(score: TestScore) -> str:
    low, high = score.interval
    return f"{score.rate:.1%} ({low:.1%}–{high:.1%})"


def _issue(test_id: str, issues: Mapping[str, Any]) -> str:
    """``#N`` of the test's open flake issue (``issues`` by ``id_key``), or ""."""
    entry = issues.get(id_key(test_id))
    return f"#{entry.number}" if entry is not None else ""


def render(
    repository: str,
    digest: HistoryDigest,
    issues: Mapping[str, Any],
    now: dt.datetime,
    rows: int,
    start: str,
    end: str,
    note: str,
    causes: Sequence[Any] = (),
    total_hits: int = 0,
) -> str:
    """The text between the digest markers, from the history (``rows`` ranked at most);
    ``causes``: the open cause issues' entries, shown with their trend in the window."""
    top = ranked(digest.scores)
    flaky_runs = sum(s.flaky_runs for s in top)
    lines = [
        start,
        f"## Flaky tests in {md.escape(repository)}",
        "",
        f"Updated {iso(now)} from the flake history: {md.escape(digest.window)}.",
        f"{len(top)} tests failed a first attempt; {flaky_runs} flaky runs in all. "
        "Ranked by flaky runs in the window (builds a flake cost), then failure rate. "
        "Rates are first-attempt failures over runs, with their exact 95% interval; "
        "the trend compares this window with the previous one of the same size.",
        "",
    ]
    lines += digest_causes.render(causes, total_hits, now, digest.cause_trends)
    fresh = new_this_week(digest.scores, now)
    if fresh:
        lines += [f"### New flaky tests this week ({len(fresh)})", ""]
        for s in fresh[:NEW_ROWS]:
            issue = _issue(s.test_id, issues)
            lines.append(
                f"- {md.code(md.clip(s.test_id, 200))}: first failed "
                f"{md.escape(s.first_failure[:10])}, {s.flaky_runs} flaky runs"
                + (f" ({issue})" if issue else "")
            )
        if len(fresh) > NEW_ROWS:
            lines.append(f"- …and {len(fresh) - NEW_ROWS} more")
        lines.append("")
    if not top:
        lines += ["No test failed a first attempt in the window. :tada:", "", note, end]
        return "\n".join(lines)
    header = ["#", "Test", "Flaky runs", "Hard failures", "Rate (95% interval)", "Runs", "Trend"]
    header += ["State", "Issue"]
    lines += ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for n, s in enumerate(top[:rows], start=1):
        row = [
            str(n),
            md.table_code(md.clip(s.test_id, 200)),
            str(s.flaky_runs),
            str(s.hard_failures),
            _rate(s),
            str(s.runs),
            trend(s),
            s.state,
            _issue(s.test_id, issues),
        ]
        lines.append("| " + " | ".join(row) + " |")
    if len(top) > rows:
        rest = top[rows:]
        lines += ["", f"…and {len(rest)} more with {sum(s.flaky_runs for s in rest)} flaky runs."]
    lines += ["", note, end]
    return "\n".join(lines)
