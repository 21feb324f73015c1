"""Counting each run of a quarantined test in its issue's marker (``flakewarden issues``).

Release is decided from these counts, so a pass is data as much as a failure;
an issue whose marker was tampered with is reported by number and not counted.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
from collections.abc import Iterable, Mapping
from typing import Any, Optional

from flakewarden.errors import GitHubError
from flakewarden.github.api import GitHubClient
from flakewarden.issues.hit_ledger import Evidence, record
from flakewarden.issues.marker import key_for, key_of
from flakewarden.issues.records import MalformedMarker, RunContext, iso
from flakewarden.issues.tracker import FlakeTracker, is_final
from flakewarden.model import Outcome, TestResult
from flakewarden.quarantine.policy import count_outcome
from flakewarden.quarantine.quarantined import quarantined_issues


@dataclasses.dataclass
class QuarantineCount:
    counted: set[str] = dataclasses.field(default_factory=set)
    skipped: set[str] = dataclasses.field(default_factory=set)  # reported, not to be filed
    errors: list[str] = dataclasses.field(default_factory=list)
    stopped: bool = False  # every further request would fail the same way


def count_quarantined(
    client: GitHubClient,
    repository: str,
    tests: Iterable[TestResult],
    now: Optional[dt.datetime] = None,
    evidence: Optional[Mapping[str, Evidence]] = None,
) -> QuarantineCount:
    """Count this run of every quarantined test in its marker, passes included.

    Release is decided from these counts (``runs``, ``failures``, ``recent``), so a
    pass is data too. A quarantined test that flaked records its hit (``hit_ledger``)
    in a one-line comment: its issue already says how it flakes. The caller files
    issues for the flaky tests neither ``counted`` nor ``skipped`` here; never
    raises ``GitHubError``.
    """
    now = now or dt.datetime.now(dt.timezone.utc)
    tracker = FlakeTracker(client, repository)
    result = QuarantineCount()
    ctx = RunContext.from_env()
    alone = Evidence("local-" + os.urandom(12).hex(), iso(now - dt.timedelta(minutes=1)))
    try:
        listed = quarantined_issues(tracker)
    except GitHubError as exc:
        result.errors.append(f"listing quarantined tests: {exc}")
        result.stopped = is_final(exc)
        return result
    by_key = {key_of(issue.marker): issue for issue, _ in listed}
    for test in tests:
        issue = by_key.get(key_for(test.id))
        if issue is None or test.outcome is Outcome.SKIPPED or not test.attempts:
            continue
        try:
            fresh = tracker.get(issue.number)
            if fresh.problem:
                raise MalformedMarker(issue.number, fresh.problem)
            failed = test.outcome is not Outcome.PASSED

            def counted(marker: dict[str, Any], failed: bool = failed) -> None:
                count_outcome(marker, failed)
                marker["last"] = iso(now)

            if test.outcome is Outcome.FLAKY:
                seen = (evidence or {}).get(test.id, alone)
                record(
                    tracker,
                    fresh,
                    {seen.key: 1},
                    lambda _hits: f"Flaked again while quarantined, in {ctx.describe()}.\n",
                    seen.not_before,
                    counted,
                )
            else:
                marker = {**issue.marker, **fresh.marker}
                count_outcome(marker, failed)
                tracker.update(fresh, marker)
        except MalformedMarker as exc:
            result.errors.append(str(exc))
            result.skipped.add(test.id)
            continue
        except GitHubError as exc:
            result.errors.append(f"{test.id}: counting its quarantined run: {exc}")
            if is_final(exc):
                result.stopped = True
                break
            continue
        result.counted.add(test.id)
    return result
