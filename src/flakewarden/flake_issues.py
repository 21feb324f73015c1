"""One GitHub issue per flaky test, found again by its hidden marker.

Issues are found by listing the ``flaky-test`` label (the search API lags
behind new issues), never by search. A recurrence adds a comment and bumps
``hits``/``last`` in the marker line, the only line ever rewritten; a closed
issue that recurs is reopened, because it was closed by a fix that did not
hold. Two jobs filing the same flake at once both list again after creating;
the lowest number wins and the others are closed into it, hits added.
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
from .github_api import GitHubClient, GitHubRequestError
from .marker import format_marker, read_marker, replace_marker
from .model import Outcome, TestResult

LABEL = "flaky-test"
LABEL_COLOR = "d93f0b"
LABEL_DESCRIPTION = "Failed, then passed on a rerun; tracked by flakewarden"
TITLE_PREFIX = "flake: "
TITLE_LIMIT = 256
# Issues another job may have created while we were listing: updated this recently.
DEDUP_WINDOW = dt.timedelta(minutes=10)
TRACEBACK_LIMIT = 20_000
COMMENT_TRACEBACK_LIMIT = 6_000
# Errors after which every further request would fail the same way.
_STOP_STATUSES = frozenset({401, 403, 404, 410, 429})


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
    found = index.get(test_id)
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

    @classmethod
    def from_api(cls, data: Mapping[str, Any], marker: dict[str, Any]) -> FlakeIssue:
        return cls(
            number=int(data["number"]),
            id=int(data["id"]),
            state=str(data["state"]),
            body=str(data.get("body") or ""),
            html_url=str(data.get("html_url") or ""),
            marker=marker,
        )


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


def _marker_of(item: Mapping[str, Any]) -> Optional[dict[str, Any]]:
    marker = read_marker(item.get("body"))
    if marker is not None:
        return marker
    # An issue whose marker a human deleted is still recognised by its exact title.
    title = str(item.get("title") or "")
    if title.startswith(TITLE_PREFIX) and not title.endswith("…"):
        return {
            "id": title[len(TITLE_PREFIX) :],
            "hits": 0,
            "first": item.get("created_at"),
            "from_title": True,
        }
    return None


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
        self._label_ready = False

    @property
    def base(self) -> str:
        return f"/repos/{self.repository}"

    def index(self, state: str = "all", since: Optional[str] = None) -> dict[str, list[FlakeIssue]]:
        """Every ``flaky-test`` issue by test id, pull requests skipped, lowest number first."""
        params: dict[str, Any] = {"labels": LABEL, "state": state}
        if since:
            params["since"] = since
        found: dict[str, list[FlakeIssue]] = {}
        for item in self.client.paginate(self.base + "/issues", params):
            if "pull_request" in item:
                continue
            marker = _marker_of(item)
            if marker is not None:
                found.setdefault(str(marker["id"]), []).append(FlakeIssue.from_api(item, marker))
        for issues in found.values():
            issues.sort(key=lambda i: i.number)
        return found

    def get(self, number: int) -> FlakeIssue:
        data = self.client.get_json(f"{self.base}/issues/{number}")
        return FlakeIssue.from_api(data, _marker_of(data) or {})

    def ensure_label(self, name: str, color: str, description: str) -> None:
        """Create the label when the repository lacks it (checked once per tracker)."""
        if not self._label_ready:
            ensure_label(self.client, self.repository, name, color, description)
            self._label_ready = True

    def create(self, title: str, body: str) -> FlakeIssue:
        self.ensure_label(LABEL, LABEL_COLOR, LABEL_DESCRIPTION)
        data = self.client.post_json(
            f"{self.base}/issues", {"title": title, "body": body, "labels": [LABEL]}
        )
        return FlakeIssue.from_api(data, read_marker(data.get("body")) or {})

    def update(self, issue: FlakeIssue, marker: dict[str, Any], **fields: Any) -> FlakeIssue:
        """Rewrite only the marker line (and any other ``fields``, e.g. ``state``)."""
        body = replace_marker(issue.body, marker)
        data = self.client.patch_json(
            f"{self.base}/issues/{issue.number}", {"body": body, **fields}
        )
        return FlakeIssue.from_api(data, marker)

    def comment(self, number: int, body: str) -> None:
        self.client.post_json(f"{self.base}/issues/{number}/comments", {"body": body})


# -- text ------------------------------------------------------------------------


def _attempts_table(test: TestResult) -> str:
    rows = [
        "| Attempt | Outcome | Phase | Duration | First line |",
        "| --- | --- | --- | --- | --- |",
    ]
    for a in test.attempts:
        rows.append(
            f"| {a.attempt} | {a.outcome.value} | {md.table_cell(a.phase)} | "
            f"{a.duration:.2f} s | {md.table_cell(md.clip(a.message, 200))} |"
        )
    return "\n".join(rows)


def _failure_details(test: TestResult, limit: int) -> str:
    first = test.first_failure
    if first is None or not (first.longrepr or first.message):
        return ""
    text = md.clip(first.longrepr or first.message, limit)
    return (
        f"<details><summary>First failure (attempt {first.attempt})</summary>\n\n"
        f"{md.code_block(text, 'text')}\n\n</details>"
    )


def _summary(test: TestResult) -> str:
    failures = len(test.failures)
    return f"failed {failures} of {len(test.attempts)} attempts, then passed on a rerun"


def issue_body(test: TestResult, ctx: RunContext, marker: dict[str, Any]) -> str:
    parts = [
        format_marker(marker),
        f"### {md.code(test.id)} is flaky",
        "",
        f"It {_summary(test)} in {ctx.describe()}.",
        "",
    ]
    if test.file:
        where = test.file + (f":{test.line}" if test.line is not None else "")
        parts += [f"Defined at {md.code(where)}.", ""]
    parts += [_attempts_table(test), ""]
    details = _failure_details(test, TRACEBACK_LIMIT)
    if details:
        parts += [details, ""]
    parts += [
        "### Investigation",
        "",
        "_Notes, suspects and links go here. flakewarden never edits this text: it only "
        "rewrites the hidden marker line at the top._",
        "",
        "---",
        "<sub>Filed by flakewarden. Each recurrence adds a comment and counts a hit. "
        "Close this issue when a fix lands; if the test flakes again it is reopened.</sub>",
        "",
    ]
    return "\n".join(parts)


def recurrence_comment(test: TestResult, ctx: RunContext, hits: int, reopened: bool) -> str:
    head = (
        f"**The fix did not hold:** this test flaked again in {ctx.describe()}, "
        "so the issue is reopened."
        if reopened
        else f"Flaked again in {ctx.describe()}."
    )
    lines = [head, "", f"It {_summary(test)}. Hits so far: **{hits}**."]
    first = test.first_failure
    if first is not None and first.message:
        lines += ["", f"First line: {md.code(md.clip(first.message, 300))}"]
    details = _failure_details(test, COMMENT_TRACEBACK_LIMIT)
    if details:
        lines += ["", details]
    return "\n".join(lines) + "\n"


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
        if isinstance(exc, GitHubRequestError) and exc.status in _STOP_STATUSES:
            result.not_filed = [t.id for t in tests]
            return result
        index = {}  # a failed lookup files fresh issues rather than dropping the signal
    created: dict[str, FlakeIssue] = {}
    for position, test in enumerate(tests):
        try:
            filed = _file_one(tracker, test, issues_for(index, test.id), ctx, now, created)
        except GitHubError as exc:
            result.errors.append(f"{test.id}: {exc}")
            result.not_filed.append(test.id)
            if isinstance(exc, GitHubRequestError) and exc.status in _STOP_STATUSES:
                result.not_filed += [t.id for t in tests[position + 1 :]]
                break
            continue
        result.filed.append(filed)
    if created:
        try:
            _dedup(tracker, created, ctx, now, result)
        except GitHubError as exc:
            result.errors.append(f"checking for duplicate issues: {exc}")
    return result


def _file_one(
    tracker: FlakeTracker,
    test: TestResult,
    known: list[FlakeIssue],
    ctx: RunContext,
    now: dt.datetime,
    created: dict[str, FlakeIssue],
) -> Filed:
    stamp = iso(now)
    open_issues = [i for i in known if i.state == "open"]
    if open_issues:
        issue = tracker.get(open_issues[0].number)  # fresh: another job may have bumped it
        marker = {**open_issues[0].marker, **issue.marker}
        marker.update(id=test.id, hits=int(marker.get("hits", 0)) + 1, last=stamp)
        marker.setdefault("first", stamp)
        marker.pop("from_title", None)  # the marker line is written back: found by id again
        issue = tracker.update(issue, marker)
        tracker.comment(issue.number, recurrence_comment(test, ctx, marker["hits"], False))
        for extra in open_issues[1:]:  # duplicates a crashed job left behind
            _merge(tracker, extra, issue, ctx)
        return Filed(test.id, "recurred", issue.number, issue.html_url, marker["hits"])
    closed = [i for i in known if i.state == "closed" and "duplicate_of" not in i.marker]
    if closed:
        issue = tracker.get(closed[0].number)
        marker = {**closed[0].marker, **issue.marker}
        marker.update(id=test.id, hits=int(marker.get("hits", 0)) + 1, last=stamp)
        marker.setdefault("first", stamp)
        marker.pop("from_title", None)  # the marker line is written back: found by id again
        issue = tracker.update(issue, marker, state="open", state_reason="reopened")
        tracker.comment(issue.number, recurrence_comment(test, ctx, marker["hits"], True))
        return Filed(test.id, "reopened", issue.number, issue.html_url, marker["hits"])
    marker = {"id": test.id, "hits": 1, "first": stamp, "last": stamp}
    issue = tracker.create(title_for(test.id), issue_body(test, ctx, marker))
    issue.marker = marker
    created[test.id] = issue
    return Filed(test.id, "created", issue.number, issue.html_url, 1)


def _merge(tracker: FlakeTracker, loser: FlakeIssue, winner: FlakeIssue, ctx: RunContext) -> int:
    """Close ``loser`` as a duplicate of ``winner`` and add its hits there, exactly once.

    GitHub has no compare-and-swap on issue bodies, so the winner is read back
    after the write and the merge redone when another job's write replaced ours.
    """
    added = False
    marker: dict[str, Any] = {}
    for _ in range(4):
        fresh = tracker.get(winner.number)
        marker = dict(fresh.marker or winner.marker)
        merged = [int(n) for n in marker.get("merged", []) if isinstance(n, int)]
        if loser.number in merged:
            break
        marker["hits"] = int(marker.get("hits", 0)) + int(loser.marker.get("hits", 0))
        for key, pick in (("first", min), ("last", max)):
            values = [str(v) for v in (marker.get(key), loser.marker.get(key)) if v]
            if values:
                marker[key] = pick(values)
        marker["merged"] = [*merged, loser.number]
        tracker.update(fresh, marker)
        added = True
    else:
        raise GitHubError(f"could not record #{loser.number} as merged into #{winner.number}")
    if added:
        tracker.comment(
            winner.number,
            f"Also flaked in {ctx.describe()}: that job filed #{loser.number} at the same "
            f"moment, now closed as a duplicate; its {int(loser.marker.get('hits', 0))} "
            "hit(s) are counted here.\n",
        )
    loser_marker = {**loser.marker, "duplicate_of": winner.number}
    tracker.update(loser, loser_marker, state="closed", state_reason="not_planned")
    tracker.comment(
        loser.number,
        f"Duplicate of #{winner.number}: two jobs filed this flake at the same moment and "
        "the lower issue number is kept. Hits were added there.\n",
    )
    return int(marker.get("hits", 0))


def _dedup(
    tracker: FlakeTracker,
    created: dict[str, FlakeIssue],
    ctx: RunContext,
    now: dt.datetime,
    result: FilingResult,
) -> None:
    """List again; where another job filed the same test too, keep the lowest number."""
    fresh = tracker.index(state="open", since=iso(now - DEDUP_WINDOW))
    for test_id, mine in created.items():
        numbers = {i.number: i for i in fresh.get(test_id, [])}
        numbers.setdefault(mine.number, mine)
        winner_number = min(numbers)
        if winner_number == mine.number:
            continue
        hits = _merge(tracker, mine, numbers[winner_number], ctx)
        for filed in result.filed:
            if filed.test_id == test_id and filed.number == mine.number:
                filed.action, filed.number = "merged", winner_number
                filed.url, filed.hits = numbers[winner_number].html_url, hits


# -- quarantined tests -----------------------------------------------------------


@dataclasses.dataclass
class QuarantineCount:
    counted: set[str] = dataclasses.field(default_factory=set)
    errors: list[str] = dataclasses.field(default_factory=list)
    stopped: bool = False  # every further request would fail the same way


def count_quarantined(
    client: GitHubClient,
    repository: str,
    tests: Iterable[TestResult],
    now: Optional[dt.datetime] = None,
) -> QuarantineCount:
    """Count this run of every quarantined test in its marker, passes included.

    Release is decided from these counts (``runs``, ``failures``, ``recent``), so a
    pass is data too. A quarantined test that flaked bumps ``hits`` and ``last``
    but gets no comment: its issue already says it flakes. The caller files
    issues for the flaky tests not ``counted`` here; never raises ``GitHubError``.
    """
    from .quarantine import count_outcome, quarantined_issues

    now = now or dt.datetime.now(dt.timezone.utc)
    tracker = FlakeTracker(client, repository)
    result = QuarantineCount()
    try:
        listed = quarantined_issues(tracker)
    except GitHubError as exc:
        result.errors.append(f"listing quarantined tests: {exc}")
        result.stopped = isinstance(exc, GitHubRequestError) and exc.status in _STOP_STATUSES
        return result
    by_id = {str(issue.marker["id"]): issue for issue, _ in listed}
    for test in tests:
        issue = by_id.get(test.id)
        if issue is None or test.outcome is Outcome.SKIPPED or not test.attempts:
            continue
        try:
            fresh = tracker.get(issue.number)
            marker = {**issue.marker, **fresh.marker}
            count_outcome(marker, failed=test.outcome is not Outcome.PASSED)
            if test.outcome is Outcome.FLAKY:
                marker.update(hits=int(marker.get("hits", 0)) + 1, last=iso(now))
            tracker.update(fresh, marker)
        except GitHubError as exc:
            result.errors.append(f"{test.id}: counting its quarantined run: {exc}")
            if isinstance(exc, GitHubRequestError) and exc.status in _STOP_STATUSES:
                result.stopped = True
                break
            continue
        result.counted.add(test.id)
    return result
