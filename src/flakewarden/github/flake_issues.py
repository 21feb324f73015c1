"""One GitHub issue per flaky test, found again by its hidden marker.

Issues are found by listing the ``flaky-test`` label (the search API lags
behind new issues), never by search. A recurrence adds a comment and bumps
``hits``/``last`` in the marker line, the only line ever rewritten; a closed
issue that recurs is reopened, because it was closed by a fix that did not
hold. Jobs filing the same flake at once are reconciled in ``flake_merge``; an
issue whose marker was tampered with is reported by number and left alone.
"""

from __future__ import annotations

import datetime as dt
import urllib.parse
from collections.abc import Iterable, Mapping
from typing import Any, Optional

from flakewarden.errors import GitHubError
from flakewarden.github.api import BODY_LIMIT, GitHubClient
from flakewarden.github.api_errors import GitHubRequestError
from flakewarden.github.flake_merge import absorb, adopt, dedup, duplicates_of
from flakewarden.github.flake_records import (
    LABEL as LABEL,
)
from flakewarden.github.flake_records import (
    LABEL_COLOR as LABEL_COLOR,
)
from flakewarden.github.flake_records import (
    LABEL_DESCRIPTION as LABEL_DESCRIPTION,
)
from flakewarden.github.flake_records import (
    TITLE_LIMIT as TITLE_LIMIT,
)
from flakewarden.github.flake_records import (
    TITLE_PREFIX as TITLE_PREFIX,
)
from flakewarden.github.flake_records import (
    Filed as Filed,
)
from flakewarden.github.flake_records import (
    FilingResult as FilingResult,
)
from flakewarden.github.flake_records import (
    FlakeIssue as FlakeIssue,
)
from flakewarden.github.flake_records import (
    MalformedMarker as MalformedMarker,
)
from flakewarden.github.flake_records import (
    RunContext as RunContext,
)
from flakewarden.github.flake_records import (
    iso as iso,
)
from flakewarden.github.flake_records import (
    issues_for as issues_for,
)
from flakewarden.github.flake_records import (
    title_for as title_for,
)
from flakewarden.github.flake_text import issue_body, malformed_comment, recurrence_comment
from flakewarden.github.marker import (
    hits_of,
    id_fields,
    key_for,
    key_of,
    read_marker,
    replace_marker,
    scan,
)
from flakewarden.github.marker import problem as marker_problem
from flakewarden.model import TestResult


def _marker_of(item: Mapping[str, Any]) -> tuple[Optional[dict[str, Any]], str]:
    """The marker of an API issue and what is wrong with it (``""``: nothing)."""
    found = scan(item.get("body"))
    if found.data is not None:
        return found.data, found.problem
    # An issue whose marker a human deleted (or broke) is still recognised by its exact title.
    title = str(item.get("title") or "")
    if title.startswith(TITLE_PREFIX) and not title.endswith("…"):
        marker = {
            "id": title[len(TITLE_PREFIX) :],
            "hits": 0,
            "first": item.get("created_at"),
            "from_title": True,
        }
        return marker, found.problem
    return None, found.problem


def is_final(exc: GitHubError) -> bool:
    """True when every further request would fail the same way."""
    return isinstance(exc, GitHubRequestError) and exc.final


def ensure_label(
    client: GitHubClient, repository: str, name: str, color: str, description: str
) -> None:
    """Create label ``name`` when the repository lacks it; another job winning the race is fine."""
    try:
        client.get_json(f"/repos/{repository}/labels/{urllib.parse.quote(name, safe='')}")
        return
    except GitHubRequestError as exc:
        if exc.status != 404:
            raise
    try:
        client.post_json(
            f"/repos/{repository}/labels",
            {"name": name, "color": color, "description": description},
        )
    except GitHubRequestError as exc:
        if exc.status != 422:  # 422 "already_exists": created meanwhile
            raise


class FlakeTracker:
    """The ``flaky-test`` issues of one repository."""

    def __init__(self, client: GitHubClient, repository: str) -> None:
        self.client = client
        self.repository = repository
        self._label_checked = False
        # Problems worth one line in the warning that did not stop any test's filing.
        self.notes: list[str] = []

    @property
    def base(self) -> str:
        return f"/repos/{self.repository}"

    def index(self, state: str = "all", since: Optional[str] = None) -> dict[str, list[FlakeIssue]]:
        """Every ``flaky-test`` issue by test key, pull requests skipped, lowest number first."""
        params: dict[str, Any] = {"labels": LABEL, "state": state}
        if since:
            params["since"] = since
        found: dict[str, list[FlakeIssue]] = {}
        for item in self.client.paginate(self.base + "/issues", params):
            if "pull_request" in item:
                continue
            marker, problem = _marker_of(item)
            if marker is not None:
                issue = FlakeIssue.from_api(item, marker, problem)
                found.setdefault(key_of(marker), []).append(issue)
        for issues in found.values():
            issues.sort(key=lambda i: i.number)
        return found

    def get(self, number: int) -> FlakeIssue:
        data = self.client.get_json(f"{self.base}/issues/{number}")
        marker, problem = _marker_of(data)
        return FlakeIssue.from_api(data, marker or {}, problem)

    def ensure_label(self, name: str, color: str, description: str) -> None:
        """Create the label when the repository lacks it: tried once per run, whatever happens.

        GitHub creates a label an issue names anyway (without colour or
        description), so a failed check is noted, not repeated for every test.
        """
        if self._label_checked:
            return
        self._label_checked = True
        try:
            ensure_label(self.client, self.repository, name, color, description)
        except GitHubError as exc:
            if is_final(exc):
                raise
            self.notes.append(f"checking the {name} label: {exc}")

    def create(self, title: str, body: str) -> FlakeIssue:
        self.ensure_label(LABEL, LABEL_COLOR, LABEL_DESCRIPTION)
        data = self.client.post_json(
            f"{self.base}/issues", {"title": title, "body": body, "labels": [LABEL]}
        )
        return FlakeIssue.from_api(data, read_marker(data.get("body")) or {})

    def update(self, issue: FlakeIssue, marker: dict[str, Any], **fields: Any) -> FlakeIssue:
        """Rewrite only the marker line (and any other ``fields``, e.g. ``state``).

        An issue whose marker is malformed is never rewritten: its count is the
        one piece of data flakewarden cannot reconstruct.
        """
        bad = issue.problem or marker_problem(marker)
        if bad:
            raise MalformedMarker(issue.number, bad)
        try:
            body = replace_marker(issue.body, marker)
        except ValueError:
            raise MalformedMarker(issue.number, "not valid JSON") from None
        if len(body) >= BODY_LIMIT:  # capping would cut the human text at the end
            raise GitHubError(
                f"issue #{issue.number}: its body is at GitHub's {BODY_LIMIT:,}-character "
                "limit, so its marker cannot grow; shorten the issue's text"
            )
        data = self.client.patch_json(
            f"{self.base}/issues/{issue.number}", {"body": body, **fields}
        )
        return FlakeIssue.from_api(data, marker)

    def comment(self, number: int, body: str) -> None:
        self.client.post_json(f"{self.base}/issues/{number}/comments", {"body": body})


# -- filing ----------------------------------------------------------------------


def file_flakes(
    client: GitHubClient,
    repository: str,
    tests: Iterable[TestResult],
    ctx: RunContext,
    now: Optional[dt.datetime] = None,
) -> FilingResult:
    """File, bump or reopen one issue per flaky test; never raises ``GitHubError``."""
    now = now or dt.datetime.now(dt.timezone.utc)
    tracker = FlakeTracker(client, repository)
    result = FilingResult()
    tests = list(tests)
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
        try:
            filed = _file_one(tracker, test, issues_for(index, test.id), ctx, now, created)
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
    tracker: FlakeTracker, listed: FlakeIssue, test: TestResult, ctx: RunContext, stamp: str
) -> tuple[FlakeIssue, dict[str, Any]]:
    """The issue read again right before its marker is rewritten, and the merged marker.

    A malformed marker gets the recurrence as a comment (the hit is not lost,
    only not counted) and is reported; nothing in its body is touched.
    """
    issue = tracker.get(listed.number)  # fresh: another job may have bumped it
    if issue.problem:
        tracker.comment(issue.number, malformed_comment(test, ctx, issue.problem))
        raise MalformedMarker(issue.number, issue.problem)
    marker = {**listed.marker, **issue.marker}
    marker.update(id_fields(test.id), last=stamp)
    marker["hits"] = hits_of(marker) + 1
    marker.setdefault("first", stamp)
    marker.pop("from_title", None)  # the marker line is written back: found by id again
    return issue, marker


def _file_one(
    tracker: FlakeTracker,
    test: TestResult,
    known: list[FlakeIssue],
    ctx: RunContext,
    now: dt.datetime,
    created: dict[str, tuple[str, FlakeIssue]],
) -> Filed:
    stamp = iso(now)
    open_issues = [i for i in known if i.state == "open"]
    if open_issues:
        issue, marker = _fresh(tracker, open_issues[0], test, ctx, stamp)
        adopt(marker, duplicates_of(known, issue.number))  # merges a lost write left out
        issue = tracker.update(issue, marker)
        tracker.comment(issue.number, recurrence_comment(test, ctx, marker["hits"], False))
        for extra in open_issues[1:]:  # duplicates a crashed job left behind
            try:
                absorb(tracker, extra, issue.number, key_for(test.id), ctx, now)
            except GitHubError as exc:
                if is_final(exc):
                    raise
                tracker.notes.append(f"merging #{extra.number} into #{issue.number}: {exc}")
        return Filed(test.id, "recurred", issue.number, issue.html_url, marker["hits"])
    closed = [i for i in known if i.state == "closed" and "duplicate_of" not in i.marker]
    if closed:
        issue, marker = _fresh(tracker, closed[0], test, ctx, stamp)
        adopt(marker, duplicates_of(known, issue.number))
        issue = tracker.update(issue, marker, state="open", state_reason="reopened")
        tracker.comment(issue.number, recurrence_comment(test, ctx, marker["hits"], True))
        return Filed(test.id, "reopened", issue.number, issue.html_url, marker["hits"])
    marker = {**id_fields(test.id), "hits": 1, "first": stamp, "last": stamp}
    issue = tracker.create(title_for(test.id), issue_body(test, ctx, marker))
    issue.marker = marker
    created[key_for(test.id)] = (test.id, issue)
    return Filed(test.id, "created", issue.number, issue.html_url, 1)
