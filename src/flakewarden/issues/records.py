"""The records of flake issues: labels, titles, the run a filing comes from, and outcomes.

Apart from ``flake_issues`` (the filing itself) so the text and merge modules it uses
can share these types without importing it back.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
from collections.abc import Mapping
from typing import Any, Optional

from flakewarden.errors import GitHubError
from flakewarden.issues.marker import (
    key_for,
)
from flakewarden.reports import markdown as md

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
    created_at: str = ""
    author: str = ""  # the login that opened it: the filer, whose hit records count

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
            created_at=str(data.get("created_at") or ""),
            author=_login(data.get("user")),
        )


def _login(user: Any) -> str:
    return str(user.get("login") or "") if isinstance(user, Mapping) else ""


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
    owners: tuple[str, ...] = ()  # who a new issue went to (users, @org/teams, emails)


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
