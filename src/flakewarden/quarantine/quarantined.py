"""Reading the quarantined set from GitHub: the open ``flaky-test`` issues labelled ``quarantined``.

It runs before the tests (a failing quarantined test must not fail the run),
so it is quick to give up: one overall deadline, one retry, short waits; the
caller goes on with no test quarantined when it cannot be read.
"""

from __future__ import annotations

from typing import Any, Optional

from flakewarden.github.api import GitHubClient
from flakewarden.issues.marker import key_of, read_marker
from flakewarden.issues.records import LABEL, FlakeIssue
from flakewarden.issues.tracker import FlakeTracker

QUARANTINED = "quarantined"

# Seconds reading the quarantined set may take in all (config ``quarantine_read_deadline``).
QUARANTINE_READ_DEADLINE = 15.0


def quarantined_issues(tracker: FlakeTracker) -> list[tuple[FlakeIssue, dict[str, Any]]]:
    """Open issues labelled ``flaky-test`` and ``quarantined``, with their raw API data."""
    found = []
    params = {"labels": f"{LABEL},{QUARANTINED}", "state": "open"}
    for item in tracker.client.paginate(tracker.base + "/issues", params):
        if "pull_request" in item:
            continue
        issue = FlakeIssue.from_api(item, {})
        marker = read_marker(issue.body)
        if marker is not None:
            issue.marker = marker
            found.append((issue, item))
    return found


def fetch_quarantined_set(
    repository: str,
    token: Optional[str] = None,
    client: Optional[GitHubClient] = None,
    *,
    deadline: float = QUARANTINE_READ_DEADLINE,
) -> frozenset[str]:
    """The ids of the quarantined tests; raises ``GitHubError`` when they cannot be read.

    Quick to give up (one retry, short waits, everything within ``deadline``
    seconds): a run must not stall on bookkeeping.
    """
    own = client is None
    client = client or GitHubClient.from_env(
        token,
        max_retries=1,
        timeout=(5.0, 15.0),
        max_wait=30.0,
        secondary_wait=5.0,
        deadline=deadline,
    )
    try:
        tracker = FlakeTracker(client, repository)
        return frozenset(key_of(issue.marker) for issue, _ in quarantined_issues(tracker))
    finally:
        if own:
            client.close()
