"""Recording a fix check on a closed flake issue: reopen it, or say the fix held or is
unverified, with the evidence, and keep the outcome in the marker.

The marker keeps ``fix_check`` (result, verdict, runs, failures, bound, at) and, when
the fix held, ``verified_at``; a failed check reopens the issue and clears
``verified_at``. An issue closed as not planned is never checked (the caller asks
``checkable`` first).
"""

from __future__ import annotations

from typing import Any, Optional

from flakewarden.issues.records import FlakeIssue
from flakewarden.issues.tracker import FlakeTracker

NOT_PLANNED = "not_planned"


def checkable(data: dict[str, Any]) -> str:
    """Why an issue's close is not checked (``""``: it is). ``data`` is the API issue."""
    if data.get("state_reason") == NOT_PLANNED:
        return "it was closed as not planned"
    return ""


def record(
    tracker: FlakeTracker,
    issue: FlakeIssue,
    check: dict[str, Any],
    comment: str,
    at: str,
    reopen: bool,
) -> FlakeIssue:
    """Comment, then write ``fix_check`` (and ``verified_at``) and reopen when asked."""
    tracker.comment(issue.number, comment)
    marker = dict(issue.marker)
    marker["fix_check"] = {**check, "at": at}
    if check.get("result") == "held":
        marker["verified_at"] = at
    else:
        marker.pop("verified_at", None)
    fields: dict[str, Optional[str]] = {}
    if reopen and issue.state == "closed":
        fields = {"state": "open", "state_reason": "reopened"}
    return tracker.update(issue, marker, **fields)
