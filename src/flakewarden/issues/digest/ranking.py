"""The rolling flake digest: one issue ranking the open ``flaky-test`` issues.

The digest carries its own label (``flake-digest``, never ``flaky-test``, or
it would rank itself) and rewrites only the text between its two markers, so
comments and notes around the ranking stay. Cost: one listing of the open
flaky-test issues (100 per page), one listing of the digest label, one write.

Human text is never rewritten or cut: when notes and ranking together would
pass GitHub's body limit, the ranking is shortened. Hit counts are read with
the same checks as ``flakewarden issues``: a malformed one is shown as ``?``
and left out of the total, never coerced.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Optional

from flakewarden.console import plural
from flakewarden.errors import GitHubError
from flakewarden.github.api import BODY_LIMIT, GitHubClient
from flakewarden.issues.digest import causes as digest_causes
from flakewarden.issues.digest import closes as unverified_closes
from flakewarden.issues.digest import owners as by_owner
from flakewarden.issues.digest.history import HistoryDigest
from flakewarden.issues.digest.history import render as history_render
from flakewarden.issues.marker import count_of, hits_of, key_of, scan
from flakewarden.issues.records import LABEL as FLAKY_LABEL
from flakewarden.issues.records import TITLE_PREFIX, iso
from flakewarden.issues.tracker import ensure_label
from flakewarden.model.verdicts import NAMES_A_FIX
from flakewarden.reports import markdown as md

LABEL = "flake-digest"
LABEL_COLOR = "5319e7"
LABEL_DESCRIPTION = "The rolling ranking of flaky tests, rewritten by flakewarden digest"
START = "<!-- flakewarden-digest:start -->"
END = "<!-- flakewarden-digest:end -->"
NOTE = (
    "<sub>Rewritten by `flakewarden digest`. Text outside this ranking, and every comment, "
    "stays as you leave it.</sub>"
)
TABLE_ROWS = 100
CHART_BARS = 10


@dataclasses.dataclass
class Entry:
    """One open flaky-test issue as the digest shows it."""

    number: int
    url: str
    test_id: str
    hits: int
    first: str
    last: str
    marker: dict[str, Any]
    problem: str = ""  # a malformed marker: its hits are unknown, not zero
    owners: tuple[str, ...] = ()  # assignees, and the teams the marker names
    untouched: int = 0  # hits that ran none of the pull request's change they were tested with
    touches: int = 0  # hits that ran some of it

    @property
    def judged(self) -> int:
        """The hits judged against a change (blame), either way."""
        return self.untouched + self.touches

    @property
    def untouched_share(self) -> float:
        """Of the judged hits, the share that ran none of their change (0 when none judged)."""
        return self.untouched / self.judged if self.judged else 0.0


def rank(entries: Iterable[Entry]) -> list[Entry]:
    """Most hits first; among equal hits the larger untouched share (failing on changes
    it never ran marks a flake, not a bug a change brought), then most recently seen,
    then lowest issue number (stable sorts)."""
    ranked = sorted(entries, key=lambda e: e.number)
    ranked.sort(key=lambda e: e.last, reverse=True)
    ranked.sort(key=lambda e: e.untouched_share, reverse=True)
    ranked.sort(key=lambda e: e.hits, reverse=True)
    return ranked


def entries_from(items: Iterable[Mapping[str, Any]]) -> list[Entry]:
    """Ranked entries (see ``rank``); a malformed marker's counts are unknown, shown as 0."""
    entries = []
    for item in items:
        if "pull_request" in item:
            continue
        found = scan(item.get("body"))
        marker = found.data
        title = str(item.get("title") or "")
        if marker is None:
            marker = {"id": title.removeprefix(TITLE_PREFIX)}
        entries.append(
            Entry(
                number=int(item["number"]),
                url=str(item.get("html_url") or ""),
                test_id=str(marker.get("id") or title),
                hits=0 if found.problem else hits_of(marker),
                first=str(marker.get("first") or item.get("created_at") or ""),
                last=str(marker.get("last") or item.get("updated_at") or ""),
                marker=marker,
                problem=found.problem,
                owners=by_owner.owners_of(item, marker),
                untouched=0 if found.problem else count_of(marker, "untouched"),
                touches=0 if found.problem else count_of(marker, "touches"),
            )
        )
    return rank(entries)


def _parse(stamp: str) -> Optional[dt.datetime]:
    try:
        return dt.datetime.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=dt.timezone.utc)
    except ValueError:
        return None


def _age(first: str, now: dt.datetime) -> str:
    start = _parse(first)
    if start is None:
        return "?"
    days = (now - start).days
    if days < 1:
        return "<1 day"
    if days < 14:
        return f"{days} days" if days > 1 else "1 day"
    if days < 60:
        return f"{days // 7} weeks"
    return f"{days // 30} months"


def _quarantine(marker: Mapping[str, Any]) -> str:
    since = marker.get("quarantined_at")
    if since:
        return "quarantined since " + md.escape(str(since)[:10])
    return ""


def _verdict(marker: Mapping[str, Any]) -> str:
    verdict = marker.get("verdict")
    if not verdict:
        return ""
    text = md.escape(str(verdict))
    at = marker.get("verdict_at")
    text += f" ({md.escape(str(at)[:10])})" if at else ""
    # flaky / not-reproducible without a bound on the knobs, and inconclusive, allow nothing
    if marker.get("verdict_quarantine_allowed") is False and verdict not in NAMES_A_FIX:
        text += ", quarantine refused"
    return text


def _untouched(entry: Entry) -> str:
    """``2 of 3``: of the hits judged against a change, those that ran none of it."""
    if entry.problem:
        return "?"
    return f"{entry.untouched} of {entry.judged}" if entry.judged else ""


def chart(entries: list[Entry], bars: int = CHART_BARS) -> str:
    """A Mermaid bar chart of the top flakes; bars are named by issue number (always safe)."""
    top = [e for e in entries[:bars] if e.hits > 0]
    if not top:
        return ""
    names = ", ".join(f'"#{e.number}"' for e in top)
    values = ", ".join(str(e.hits) for e in top)
    return "\n".join(
        [
            "```mermaid",
            "xychart-beta",
            f'    title "Hits of the top {plural(len(top), "flaky test")}"',
            f"    x-axis [{names}]",
            f'    y-axis "Hits" 0 --> {max(e.hits for e in top)}',
            f"    bar [{values}]",
            "```",
        ]
    )


def render(
    repository: str,
    entries: list[Entry],
    now: dt.datetime,
    rows: int = TABLE_ROWS,
    closes: Sequence[tuple[int, str, dict[str, Any]]] = (),
) -> str:
    """The text between the digest markers (markers included), ranking ``rows`` at most."""
    total_hits = sum(e.hits for e in entries)
    causes, entries = digest_causes.split(entries)
    lines = [
        START,
        f"## Flaky tests in {md.escape(repository)}",
        "",
        f"Updated {iso(now)} · {len(entries)} open {md.code(FLAKY_LABEL)} issues · "
        f"{total_hits} hits in total. Ranked by hits, then by the share of hits that ran "
        "none of the change they were tested with, then by most recently seen.",
        "",
    ]
    broken = [e for e in entries if e.problem]
    if broken:
        numbers = ", ".join(f"#{e.number}" for e in broken[:20])
        more = f" and {len(broken) - 20} more" if len(broken) > 20 else ""
        lines += [
            f"{len(broken)} issue(s) have a malformed marker, so their hits are shown as ? "
            f"and not counted: {numbers}{more}.",
            "",
        ]
    lines += digest_causes.render(causes, total_hits, now)
    if not entries:
        none = "No open issue of a single flaky test." if causes else "No open flaky-test issues."
        lines += [f"{none} :tada:", "", *unverified_closes.render([*closes])]
        lines += [NOTE, END]
        return "\n".join(lines)
    figure = chart(entries)
    if figure:
        lines += [figure, ""]
    show_quarantine = any(_quarantine(e.marker) for e in entries)
    show_verdict = any(_verdict(e.marker) for e in entries)
    show_untouched = any(e.judged for e in entries)
    header = ["#", "Test", "Hits"]
    if show_untouched:
        header.append("Ran none of the change")
    header += ["Last seen", "Age"]
    if show_quarantine:
        header.append("Quarantine")
    if show_verdict:
        header.append("Stress verdict")
    header.append("Issue")
    lines += ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for rank, entry in enumerate(entries[:rows], start=1):
        row = [
            str(rank),
            md.table_code(md.clip(entry.test_id, 200)),
            "?" if entry.problem else str(entry.hits),
            *([_untouched(entry)] if show_untouched else []),
            md.escape(entry.last[:10]) or "?",
            _age(entry.first, now),
        ]
        if show_quarantine:
            row.append(_quarantine(entry.marker))
        if show_verdict:
            row.append(_verdict(entry.marker))
        row.append(f"#{entry.number}")
        lines.append("| " + " | ".join(row) + " |")
    if len(entries) > rows:
        rest = entries[rows:]
        lines += [
            "",
            f"…and {len(rest)} more open flaky-test issues with {sum(e.hits for e in rest)} hits.",
        ]
    if rows:
        lines += ["", *by_owner.render(entries), *unverified_closes.render([*closes])]
    lines += ["", NOTE, END]
    return "\n".join(lines)


# What ``api.cap_body`` appended where it cut a body: a ranking cut there lost its end.
_CUT_NOTE = "_flakewarden cut this text here:"


def replace_region(body: Optional[str], region: str) -> str:
    """``body`` with the text between the digest markers replaced; the rest kept."""
    body = body or ""
    start = body.find(START)
    end = body.find(END, start + len(START)) if start >= 0 else -1
    if start >= 0 and end >= 0:
        return body[:start] + region + body[end + len(END) :]
    if start >= 0 and _CUT_NOTE in body[start:]:
        # A ranking an older version let GitHub's limit cut: its end marker is gone
        # and everything after its start is ranking, so it is replaced in place.
        return body[:start] + region + "\n"
    return region + (("\n\n" + body) if body.strip() else "\n")


def fit(
    repository: str,
    entries: list[Entry],
    now: dt.datetime,
    body: Optional[str],
    history: Optional[HistoryDigest] = None,
    closes: Sequence[tuple[int, str, dict[str, Any]]] = (),
) -> tuple[str, str]:
    """The region and the new body, with as many rows as fit beside the human text.

    With ``history`` the ranking is the history's (the issues only give their numbers).
    Raises ``GitHubError`` when the notes alone leave no room: they are never cut.
    """
    # By the key a marker names its test with (a long id by its digest); lowest number wins.
    by_id = {key_of(e.marker): e for e in reversed(entries)}
    rows = min(TABLE_ROWS, len(entries) if history is None else len(history.scores))
    while True:
        if history is None:
            region = render(repository, entries, now, rows, closes)
        else:
            causes = digest_causes.split(entries)[0]
            total = sum(e.hits for e in entries)
            region = history_render(
                repository, history, by_id, now, rows, START, END, NOTE, causes, total
            )
        new = replace_region(body, region)
        over = len(new) - (BODY_LIMIT - 1)
        if over <= 0:
            return region, new
        if rows == 0:
            raise GitHubError(
                f"the digest issue's own text takes {len(new) - len(region):,} characters, "
                f"which leaves no room for the ranking within GitHub's {BODY_LIMIT:,}; "
                "move some of it to a comment"
            )
        per_row = max(1, (len(region) // max(1, rows)))
        rows = max(0, rows - max(1, over // per_row + 1))


@dataclasses.dataclass
class DigestResult:
    number: int
    url: str
    created: bool
    entries: int


def title_for(repository: str) -> str:
    return f"flake digest: {repository}"


def build_digest(
    client: GitHubClient,
    repository: str,
    now: Optional[dt.datetime] = None,
    history: Optional[HistoryDigest] = None,
) -> DigestResult:
    """Rank the open flaky-test issues (or, with ``history``, the window's scores) and
    rewrite (or create) the digest issue."""
    now = now or dt.datetime.now(dt.timezone.utc)
    base = f"/repos/{repository}"
    items = client.paginate(base + "/issues", {"labels": FLAKY_LABEL, "state": "open"})
    entries = entries_from(items)
    closes = unverified_closes.listing(client, repository, now)
    title = title_for(repository)
    digests = [
        item
        for item in client.paginate(base + "/issues", {"labels": LABEL, "state": "open"})
        if "pull_request" not in item
    ]
    # Our own digest first (the exact title), then the lowest number.
    digests.sort(key=lambda i: (i.get("title") != title, int(i["number"])))
    if digests:
        current = digests[0]
        _, body = fit(repository, entries, now, current.get("body"), history, closes)
        data = client.patch_json(f"{base}/issues/{current['number']}", {"body": body})
        return DigestResult(
            int(data["number"]), str(data.get("html_url") or ""), False, len(entries)
        )
    ensure_label(client, repository, LABEL, LABEL_COLOR, LABEL_DESCRIPTION)
    _, body = fit(repository, entries, now, "", history, closes)
    data = client.post_json(base + "/issues", {"title": title, "body": body, "labels": [LABEL]})
    return DigestResult(int(data["number"]), str(data.get("html_url") or ""), True, len(entries))
