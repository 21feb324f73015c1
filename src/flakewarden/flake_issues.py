"""One GitHub issue per flaky test, found again by its hidden marker.

Issues are found by listing the ``flaky-test`` label (the search API lags
behind new issues), never by search. A recurrence adds a comment and bumps
``hits``/``last`` in the marker line, the only line ever rewritten; a closed
issue that recurs is reopened, because it was closed by a fix that did not
hold. Jobs filing the same flake at once are reconciled in ``flake_merge``; an
issue whose marker was tampered with is reported by number and left alone.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import urllib.parse
from collections.abc import Iterable, Mapping
from typing import Any, Optional

from . import markdown as md
from .errors import GitHubError
from .flake_merge import absorb, adopt, dedup, duplicates_of
from .flake_text import issue_body, malformed_comment, recurrence_comment
from .github_api import BODY_LIMIT, GitHubClient, GitHubRequestError
from .marker import (
    hits_of,
    id_fields,
    key_for,
    key_of,
    read_marker,
    replace_marker,
    scan,
)
from .marker import problem as marker_problem
from .model import TestResult

LABEL = "flaky-test"
LABEL_COLOR = "d93f0b"
LABEL_DESCRIPTION = "Failed, then passed on a rerun; tracked by flakewarden"
TITLE_PREFIX = "flake: "
TITLE_LIMIT = 256


def iso(moment: dt.datetime) -> str:
    return moment.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def title_for(test_id: str) -> str:
    title = TITLE_PREFIX + " ".join(test_id.split())
    return title if len(title) <= TITLE_LIMIT else title[: TITLE_LIMIT - 1] + "…"


def issues_for(index: Mapping[str, list[FlakeIssue]], test_id: str) -> list[FlakeIssue]:
    """The issues of ``test_id``: by marker, else by the title a deleted marker leaves.

    The title folds whitespace, so an id holding a line break or a double space
    is found again through its title rather than filed twice.
    """
    found = index.get(key_for(test_id))
    if found:
        return found
    titled = index.get(title_for(test_id)[len(TITLE_PREFIX) :], [])
    return [issue for issue in titled if issue.marker.get("from_title")]


@dataclasses.dataclass
class RunContext:
    """Where this run happened, from the GitHub Actions environment."""

    repository: str = ""
    server_url: str = "https://github.com"
    run_id: str = ""
    run_attempt: str = ""
    sha: str = ""
    ref_name: str = ""

    @classmethod
    def from_env(cls, env: Optional[Mapping[str, str]] = None) -> RunContext:
        env = os.environ if env is None else env
        return cls(
            repository=env.get("GITHUB_REPOSITORY", ""),
            server_url=(env.get("GITHUB_SERVER_URL") or "https://github.com").rstrip("/"),
            run_id=env.get("GITHUB_RUN_ID", ""),
            run_attempt=env.get("GITHUB_RUN_ATTEMPT", ""),
            sha=env.get("GITHUB_SHA", ""),
            ref_name=env.get("GITHUB_REF_NAME", ""),
        )

    @property
    def run_url(self) -> str:
        if not (self.repository and self.run_id):
            return ""
        url = f"{self.server_url}/{self.repository}/actions/runs/{self.run_id}"
        if self.run_attempt and self.run_attempt != "1":
            url += f"/attempts/{self.run_attempt}"
        return url

    def describe(self) -> str:
        """``[run 123](url) on branch `main` (commit `abc1234`)``, escaped."""
        where = md.link(f"run {self.run_id}", self.run_url) if self.run_url else "a local run"
        if self.ref_name:
            where += f" on {md.code(self.ref_name)}"
        if self.sha:
            where += f" at commit {md.code(self.sha[:12])}"
        return where


@dataclasses.dataclass
class FlakeIssue:
    number: int
    id: int
    state: str
    body: str
    html_url: str
    marker: dict[str, Any]
    problem: str = ""  # what is wrong with the marker; such an issue is never rewritten

    @classmethod
    def from_api(
        cls, data: Mapping[str, Any], marker: dict[str, Any], problem: str = ""
    ) -> FlakeIssue:
        return cls(
            number=int(data["number"]),
            id=int(data["id"]),
            state=str(data["state"]),
            body=str(data.get("body") or ""),
            html_url=str(data.get("html_url") or ""),
            marker=marker,
            problem=problem,
        )


class MalformedMarker(GitHubError):
    """An issue whose marker someone broke: reported by number and left as it is."""

    def __init__(self, number: int, problem: str) -> None:
        super().__init__(
            f"issue #{number}: marker is malformed ({problem}); not updated, "
            "fix that line of the issue to resume counting"
        )
        self.number = number


@dataclasses.dataclass
class Filed:
    """What happened to one flaky test's issue."""

    test_id: str
    action: str  # created, recurred, reopened, merged
    number: int
    url: str
    hits: int


@dataclasses.dataclass
class FilingResult:
    filed: list[Filed] = dataclasses.field(default_factory=list)
    errors: list[str] = dataclasses.field(default_factory=list)
    not_filed: list[str] = dataclasses.field(default_factory=list)

    def warning(self, total: int) -> str:
        """One line that says what failed and what to do, or ``""``."""
        if not self.errors:
            return ""
        head = (
            f"flake issues not updated for {len(self.not_filed)} of {total} flaky tests"
            if self.not_filed
            else "flake issue bookkeeping was incomplete"
        )
        more = f" (and {len(self.errors) - 1} more errors)" if len(self.errors) > 1 else ""
        return f"{head}: {self.errors[0]}{more}"


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
