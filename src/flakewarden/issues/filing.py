"""One GitHub issue per flaky test, found again by its hidden marker.

A recurrence is recorded, not added: its comment names the run it came from,
and the hits are recounted from those records (``hit_ledger``), so jobs
finishing at once, or one report published twice, count exactly. A closed
issue that recurs is reopened, because it was closed by a fix that did not
hold. Jobs that opened the same flake's issue at once are reconciled in
``flake_merge``; an issue whose marker was tampered with is reported by number
and left alone.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterable, Mapping
from typing import Any, Optional

from flakewarden.errors import GitHubError
from flakewarden.github.api import GitHubClient
from flakewarden.issues.hit_ledger import ORIGIN_VERDICT, VERDICTS, Checkpoint, Evidence, record
from flakewarden.issues.marker import id_fields, key_for
from flakewarden.issues.merge import absorb, dedup, forward
from flakewarden.issues.owners import Ownership
from flakewarden.issues.records import (
    LABEL,
    Filed,
    FilingResult,
    FlakeIssue,
    MalformedMarker,
    RunContext,
    iso,
    issues_for,
    title_for,
)
from flakewarden.issues.text import (
    issue_body,
    malformed_comment,
    owner_section,
    recurrence_comment,
)
from flakewarden.issues.tracker import FlakeTracker, is_final
from flakewarden.model import TestResult

TRIAGE_COLOR = "fbca04"
TRIAGE_DESCRIPTION = "A flaky test nobody owns yet: find it an owner"

# -- filing ----------------------------------------------------------------------


def file_flakes(
    client: GitHubClient,
    repository: str,
    tests: Iterable[TestResult],
    ctx: RunContext,
    now: Optional[dt.datetime] = None,
    evidence: Optional[Mapping[str, Evidence]] = None,
    ownership: Optional[Ownership] = None,
) -> FilingResult:
    """File, bump or reopen one issue per flaky test; never raises ``GitHubError``.

    ``evidence`` names the run each test flaked in (``RunReport.evidence_key``);
    without it this call is one run of its own. ``ownership`` decides who a new
    issue is assigned to (or that it is labelled for triage).
    """
    now = now or dt.datetime.now(dt.timezone.utc)
    tracker = FlakeTracker(client, repository)
    result = FilingResult()
    tests = list(tests)
    alone = Evidence("local-" + os.urandom(12).hex(), iso(now - dt.timedelta(minutes=1)))
    try:
        index = tracker.index()
    except GitHubError as exc:
        result.errors.append(f"listing {LABEL} issues: {exc}")
        if is_final(exc):
            result.not_filed = [t.id for t in tests]
            return result
        index = {}  # a failed lookup files fresh issues rather than dropping the signal
    created: dict[str, tuple[str, FlakeIssue]] = {}
    stopped = False
    for position, test in enumerate(tests):
        seen = (evidence or {}).get(test.id, alone)
        try:
            found = issues_for(index, test.id)
            if any(i.state == "open" or "duplicate_of" not in i.marker for i in found):
                filed = _file_one(tracker, test, found, ctx, now, seen)
            else:
                filed = _open(tracker, test, ctx, now, seen, ownership, created)
        except GitHubError as exc:
            result.errors.append(
                str(exc) if isinstance(exc, MalformedMarker) else f"{test.id}: {exc}"
            )
            result.not_filed.append(test.id)
            if is_final(exc):
                result.not_filed += [t.id for t in tests[position + 1 :]]
                stopped = True
                break
            continue
        result.filed.append(filed)
    if created and not stopped:
        try:
            dedup(tracker, created, ctx, now, result.filed)
        except GitHubError as exc:
            result.errors.append(f"checking for duplicate issues: {exc}")
    result.errors += tracker.notes
    return result


def _fresh(
    tracker: FlakeTracker, listed: FlakeIssue, test: TestResult, ctx: RunContext
) -> FlakeIssue:
    """The issue read again right before its hit is recorded.

    A malformed marker gets the recurrence as a comment (the hit is not lost,
    only not counted) and is reported; nothing in its body is touched.
    """
    issue = tracker.get(listed.number)  # fresh: another job may have written it
    if issue.problem:
        tracker.comment(issue.number, malformed_comment(test, ctx, issue.problem))
        raise MalformedMarker(issue.number, issue.problem)
    return issue


def _open(
    tracker: FlakeTracker,
    test: TestResult,
    ctx: RunContext,
    now: dt.datetime,
    seen: Evidence,
    ownership: Optional[Ownership],
    created: dict[str, tuple[str, FlakeIssue]],
) -> Filed:
    """A new issue: assigned to the test's owners, or labelled for triage when it has none."""
    stamp = iso(now)
    marker = {**id_fields(test.id), "hits": 1, "first": stamp, "last": stamp}
    marker.update(origin=seen.key, ledger=Checkpoint(None, 0).to_json())
    verdict = _verdict(test)
    if verdict:
        marker.update({ORIGIN_VERDICT: verdict, "untouched": 0, "touches": 0, verdict: 1})
    labels: list[str] = []
    assignees: tuple[str, ...] = ()
    section: list[str] = []
    if ownership is not None:
        owned, path = ownership.of(test.file)
        section = owner_section(owned, path, ownership.triage_label)
        if owned.anyone:
            marker["owners"] = [*owned.users, *(f"@{t}" for t in owned.teams), *owned.emails]
            assignees = owned.users
        else:
            labels.append(ownership.triage_label)
            tracker.ensure_label(ownership.triage_label, TRIAGE_COLOR, TRIAGE_DESCRIPTION)
    body = issue_body(test, ctx, marker, section)
    issue = tracker.create(title_for(test.id), body, labels, assignees)
    issue.marker = marker
    created[key_for(test.id)] = (test.id, issue)
    owners = tuple(str(o) for o in marker.get("owners", ()))
    return Filed(test.id, "created", issue.number, issue.html_url, 1, owners)


def _file_one(
    tracker: FlakeTracker,
    test: TestResult,
    known: list[FlakeIssue],
    ctx: RunContext,
    now: dt.datetime,
    seen: Evidence,
) -> Filed:
    stamp = iso(now)

    def change(marker: dict[str, Any]) -> None:
        marker.update(id_fields(test.id), last=stamp)
        marker.setdefault("first", stamp)

    open_issues = [i for i in known if i.state == "open"]
    closed = [i for i in known if i.state == "closed" and "duplicate_of" not in i.marker]
    reopen = not open_issues
    issue = _fresh(tracker, (open_issues or closed)[0], test, ctx)
    fields = {"state": "open", "state_reason": "reopened"} if reopen else {}
    issue, hits, new = record(
        tracker,
        issue,
        {seen.key: 1},
        lambda h: recurrence_comment(test, ctx, h, reopen),
        seen.not_before,
        change,
        {seen.key: verdict} if (verdict := _verdict(test)) else None,
        **fields,
    )
    issue, hits = forward(tracker, issue, hits, {seen.key: 1})
    for extra in open_issues[1:]:  # duplicates a crashed job left behind
        try:
            issue, hits = absorb(tracker, extra, issue.number, ctx)
        except GitHubError as exc:
            if is_final(exc):
                raise
            tracker.notes.append(f"merging #{extra.number} into #{issue.number}: {exc}")
    action = ("reopened" if reopen else "recurred") if new else "counted"
    return Filed(test.id, action, issue.number, issue.html_url, hits)


def _verdict(test: TestResult) -> str:
    """``untouched`` or ``touches`` when blame judged the test against a change, else ``""``."""
    verdict = test.change.verdict if test.change is not None else ""
    return verdict if verdict in VERDICTS else ""
