"""What GitHub itself says about a workflow run and its pull request, for a publisher that
must not believe the run's artifact.

A ``workflow_run`` publisher runs with a write token on behalf of a pull request whose
code, fork included, wrote the artifact. So the run, its commit and its event come from
the API, and the pull request the artifact names is checked there: it must be open (or
at least exist) in this repository with the run's commit as its head. Nothing else from
the artifact decides where a write goes.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from flakewarden.errors import GitHubError
from flakewarden.github.api import GitHubClient
from flakewarden.github.api_errors import GitHubRequestError

PULL_REQUEST_EVENTS = ("pull_request", "pull_request_target")


@dataclasses.dataclass(frozen=True)
class RunFacts:
    id: int
    attempt: int
    event: str
    head_sha: str
    head_branch: str
    conclusion: str
    html_url: str


class NotThisPullRequest(GitHubError):
    """The artifact names a pull request whose head is not the run's commit."""


def _text(data: Any, key: str) -> str:
    value = data.get(key) if isinstance(data, dict) else None
    return value if isinstance(value, str) else ""


def run_facts(client: GitHubClient, repository: str, run_id: int) -> RunFacts:
    data = client.get_json(f"/repos/{repository}/actions/runs/{run_id}")
    if not isinstance(data, dict) or not isinstance(data.get("id"), int):
        raise GitHubError(f"GitHub sent no workflow run for run {run_id}")
    attempt = data.get("run_attempt")
    return RunFacts(
        id=int(data["id"]),
        attempt=attempt if isinstance(attempt, int) and not isinstance(attempt, bool) else 1,
        event=_text(data, "event"),
        head_sha=_text(data, "head_sha"),
        head_branch=_text(data, "head_branch"),
        conclusion=_text(data, "conclusion"),
        html_url=_text(data, "html_url"),
    )


def verified_pull_request(client: GitHubClient, repository: str, number: int, run: RunFacts) -> int:
    """``number``, once GitHub confirms its head is the run's commit, else
    ``NotThisPullRequest``."""
    try:
        data = client.get_json(f"/repos/{repository}/pulls/{number}")
    except GitHubRequestError as exc:
        if exc.status == 404:
            raise NotThisPullRequest(
                f"the artifact names pull request #{number}, which {repository} does not have"
            ) from None
        raise
    head = data.get("head") if isinstance(data, dict) else None
    sha = _text(head, "sha")
    if not run.head_sha or sha != run.head_sha:
        raise NotThisPullRequest(
            f"the artifact names pull request #{number}, whose head is {sha[:12] or 'unknown'}, "
            f"not the run's commit {run.head_sha[:12] or 'unknown'}: not publishing there"
        )
    return number
