"""The ``flaky-test`` issues of one repository: listed, read, created and rewritten.

Issues are found by listing the ``flaky-test`` label (the search API lags
behind new issues), never by search. Only the marker line of an issue body is
ever rewritten, and never when the marker is malformed.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Optional

from flakewarden.errors import GitHubError
from flakewarden.github.api import BODY_LIMIT, GitHubClient
from flakewarden.github.api_errors import GitHubRequestError
from flakewarden.issues.marker import key_of, read_marker, replace_marker, scan
from flakewarden.issues.marker import problem as marker_problem
from flakewarden.issues.records import (
    LABEL,
    LABEL_COLOR,
    LABEL_DESCRIPTION,
    TITLE_PREFIX,
    FlakeIssue,
    MalformedMarker,
)


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

    def create(
        self, title: str, body: str, labels: Sequence[str] = (), assignees: Sequence[str] = ()
    ) -> FlakeIssue:
        """Open a ``flaky-test`` issue with ``labels`` too, assigned to ``assignees``.

        GitHub refuses the whole issue when one assignee cannot be assigned (422): it is
        then opened unassigned, and the refusal noted, rather than not filed.
        """
        self.ensure_label(LABEL, LABEL_COLOR, LABEL_DESCRIPTION)
        payload: dict[str, Any] = {"title": title, "body": body, "labels": [LABEL, *labels]}
        if assignees:
            payload["assignees"] = list(assignees)[:10]  # GitHub's limit
        try:
            data = self.client.post_json(f"{self.base}/issues", payload)
        except GitHubRequestError as exc:
            if exc.status != 422 or "assignees" not in payload:
                raise
            self.notes.append(f"assigning {', '.join(assignees)}: {exc}; opened unassigned")
            del payload["assignees"]
            data = self.client.post_json(f"{self.base}/issues", payload)
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

    def comment(self, number: int, body: str) -> dict[str, Any]:
        """Post a comment; the comment as GitHub stored it (its ``created_at`` is GitHub's)."""
        data = self.client.post_json(f"{self.base}/issues/{number}/comments", {"body": body})
        return data if isinstance(data, dict) else {}

    def comments(self, number: int, since: Optional[str] = None) -> Iterator[dict[str, Any]]:
        """The comments of issue ``number``, oldest first; ``since``: updated at or after it."""
        params = {"since": since} if since else None
        yield from self.client.paginate(f"{self.base}/issues/{number}/comments", params)
