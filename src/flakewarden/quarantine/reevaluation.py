"""Reevaluating quarantined tests: release proposed by hysteresis, escalation, a rising rate.

Each change is made once and said in one comment; nothing is released silently. The
counts come from the flake history's window when it is given, else from the marker.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping
from typing import Any, Optional

from flakewarden.config import QuarantinePolicy
from flakewarden.issues.digest.owners import owners_of
from flakewarden.issues.marker import hits_of, key_of
from flakewarden.issues.records import RunContext, iso
from flakewarden.issues.tracker import FlakeTracker
from flakewarden.model import id_key
from flakewarden.model.scores import TestScore
from flakewarden.quarantine.labels import (
    ESCALATED,
    ESCALATED_COLOR,
    ESCALATED_DESCRIPTION,
    label_names,
    owner_line,
    policy_days,
)
from flakewarden.quarantine.policy import parse_time, recent_rate
from flakewarden.quarantine.quarantined import quarantined_issues
from flakewarden.reports import markdown as md


@dataclasses.dataclass
class Reevaluation:
    test_id: str
    number: int
    runs: int
    failures: int
    actions: list[str]
    source: str = "marker"  # where runs and failures came from: "history" or "marker"
    rose: str = ""  # with history: how the rate rose against the previous window
    url: str = ""
    owners: tuple[str, ...] = ()  # assignees, and the teams the marker names
    hits: Optional[int] = None


def _rose(score: Optional[TestScore]) -> str:
    if score is None or not score.rose or score.previous is None:
        return ""
    prev = score.previous
    return (
        f"its failure rate rose to {score.rate:.1%} over the last {score.runs} runs, from "
        f"{prev.rate:.1%} over the {prev.runs} runs before"
    )


@dataclasses.dataclass
class _Changes:
    """What reevaluating one quarantined issue changes: its marker, labels and comments."""

    marker: dict[str, Any]
    labels: list[str]
    actions: list[str] = dataclasses.field(default_factory=list)
    comments: list[str] = dataclasses.field(default_factory=list)

    def note(self, action: str, comment: str = "") -> None:
        self.actions.append(action)
        if comment:
            self.comments.append(comment)


def _counts(
    marker: Mapping[str, Any],
    score: Optional[TestScore],
    policy: QuarantinePolicy,
    window: Optional[str],
) -> tuple[int, int, str]:
    """Runs, failures and how to say them: the history window's (``window``) or the marker's."""
    if window is not None:
        runs = score.runs if score is not None else 0
        failures = score.first_attempt_failures if score is not None else 0
        rate = failures / runs if runs else 0.0
        where = (
            f"{failures} first-attempt failures in {runs} runs of the flake history "
            f"({rate:.1%}; {md.escape(window)})"
        )
        return runs, failures, where
    runs, failures = recent_rate(marker, policy)
    rate = failures / runs if runs else 0.0
    return runs, failures, f"{failures} failures in the last {runs} runs ({rate:.1%})"


def _clock(
    changes: _Changes,
    tracker: FlakeTracker,
    policy: QuarantinePolicy,
    now: dt.datetime,
    where: str,
    owners: str,
) -> None:
    """Start the clock of a quarantine flakewarden did not make; escalate an old one, once."""
    marker = changes.marker
    since = parse_time(marker.get("quarantined_at"))
    if since is None:
        marker["quarantined_at"] = iso(now)
        changes.note(
            "clock started",
            "This test carries the `quarantined` label but flakewarden has no record of "
            "quarantining it (no policy check). Its clock starts now: "
            f"it is escalated after {policy.max_days:g} days.",
        )
    elif now - since > policy_days(policy.max_days) and not marker.get("escalated_at"):
        marker["escalated_at"] = iso(now)
        tracker.ensure_label(ESCALATED, ESCALATED_COLOR, ESCALATED_DESCRIPTION)
        if ESCALATED not in changes.labels:
            changes.labels = [*changes.labels, ESCALATED]
        changes.note(
            "escalated",
            f"**Quarantine escalated:** quarantined since {iso(since)[:10]}, longer than the "
            f"policy's {policy.max_days:g} days; {where}. A quarantine is a loan, not a fix: "
            f"fix the test, or release it with `flakewarden release`. {owners}",
        )


def _release(
    changes: _Changes,
    policy: QuarantinePolicy,
    now: dt.datetime,
    counts: tuple[int, int, str],
    test_id: str,
    owners: str,
) -> None:
    """Propose a release below the exit rate; withdraw the proposal above the entry rate."""
    marker = changes.marker
    runs, failures, where = counts
    rate = failures / runs if runs else 0.0
    enough = runs >= policy.min_runs_to_release
    if enough and rate < policy.exit_failure_rate and not marker.get("release_proposed_at"):
        marker["release_proposed_at"] = iso(now)
        changes.note(
            "release proposed",
            f"**Release proposed:** {where}, below the exit rate of "
            f"{policy.exit_failure_rate:.0%} over at least {policy.min_runs_to_release} runs. "
            f"{owners} Release it with "
            f"{md.code('flakewarden release ' + test_id)} "
            "(or the quarantine workflow); flakewarden never releases on its own.",
        )
    elif marker.get("release_proposed_at") and rate >= policy.enter_failure_rate:
        marker.pop("release_proposed_at")
        changes.note(
            "proposal withdrawn",
            f"**Release proposal withdrawn:** {where}, back above the entry rate of "
            f"{policy.enter_failure_rate:.0%}.",
        )


def _rise(changes: _Changes, rose: str, now: dt.datetime, scored: bool, owners: str) -> None:
    """Flag a rate that rose against the previous window once; clear the flag when it fell."""
    marker = changes.marker
    if rose and not marker.get("rate_rose_at"):
        marker["rate_rose_at"] = iso(now)
        changes.note(
            "rate rose",
            f"**Failure rate rising:** {rose}. The quarantine is hiding a test that is "
            f"getting worse. {owners}",
        )
    elif not rose and marker.get("rate_rose_at") and scored:
        marker.pop("rate_rose_at")
        changes.note("rise cleared")


def reevaluate(
    tracker: FlakeTracker,
    policy: QuarantinePolicy,
    ctx: RunContext,
    now: dt.datetime,
    history: Optional[Mapping[str, TestScore]] = None,
    window: str = "",
) -> list[Reevaluation]:
    """Propose releases by hysteresis and escalate old quarantines, each once.

    With ``history`` (scores by test id over ``window``) the rate is the window's,
    runs before and after the quarantine alike, and a rate that rose against the
    previous window is flagged once; without it, the marker's own counters decide.
    """
    results = []
    # A long id is known to its marker by its digest: look scores up by that key.
    by_key = {id_key(t): s for t, s in history.items()} if history is not None else {}
    scored = history is not None
    for listed, data in quarantined_issues(tracker):
        changes = _Changes(dict(listed.marker), label_names(data))
        score = by_key.get(key_of(listed.marker))
        counts = _counts(changes.marker, score, policy, window if scored else None)
        rose = _rose(score)
        owners = owner_line(data)
        _clock(changes, tracker, policy, now, counts[2], owners)
        _release(changes, policy, now, counts, str(listed.marker["id"]), owners)
        _rise(changes, rose, now, scored, owners)
        if changes.actions:
            tracker.update(listed, changes.marker, labels=changes.labels)
            if changes.comments:
                tracker.comment(listed.number, "\n\n".join(changes.comments) + "\n")
        results.append(
            Reevaluation(
                str(listed.marker["id"]),
                listed.number,
                counts[0],
                counts[1],
                changes.actions,
                "history" if scored else "marker",
                rose,
                str(data.get("html_url") or ""),
                owners_of(data, changes.marker),
                hits_of(changes.marker),
            )
        )
    return results
