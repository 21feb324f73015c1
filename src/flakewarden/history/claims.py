"""A downloaded report's claim to a run, against the run GitHub listed it under.

A report in an artifact was written by the code of the run, a fork's pull request
included, so what it says of its own run (run id, branch, commit, event, workflow) is
a claim. ``history ingest --from-github`` knows the real run from GitHub's run listing:
the report is stored under that run, and what it claimed otherwise is kept as detail
and said in one line, so no artifact can add evidence to another run or branch.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple, Optional

from flakewarden.history.context import PULL_REQUEST_EVENTS
from flakewarden.model import RunContext, RunReport


class Stamped(NamedTuple):
    """The report under the listed run, and what it claimed otherwise ("" when nothing)."""

    report: RunReport
    claimed: str


def stamp_run(report: RunReport, listed: RunContext) -> Stamped:
    """``report`` with the listed run's identity in place of the one it claims.

    The job, matrix name, start time, OS and versions stay the report's own: they tell a
    matrix's reports apart within the run. An attempt is kept when it is one the run had
    (a re-run lists only its latest); a pull request's number and base branch are kept
    only for a run the listing says was for a pull request.
    """
    own = report.context or RunContext(started_at=report.started_at)
    pull = listed.event in PULL_REQUEST_EVENTS
    attempt = own.run_attempt
    if attempt is None or listed.run_attempt is None or not 1 <= attempt <= listed.run_attempt:
        attempt = listed.run_attempt
    real = dataclasses.replace(
        own,
        repository=listed.repository,
        workflow=listed.workflow,
        run_id=listed.run_id,
        run_attempt=attempt,
        event=listed.event,
        branch=listed.branch,
        commit=listed.commit,
        pr_number=(listed.pr_number or own.pr_number) if pull else None,
        base_branch=own.base_branch if pull else "",
    )
    return Stamped(dataclasses.replace(report, context=real), _claimed(own, real, pull))


def _claimed(own: RunContext, real: RunContext, pull: bool) -> str:
    """``run_id=1, branch='main'``: each value the report gave that the listed run does not
    have; a pull request's commit is left out (its report names the merge commit)."""
    fields = ["repository", "workflow", "run_id", "run_attempt", "event", "branch", "pr_number"]
    if not pull:
        fields.append("commit")
    parts = []
    for name in fields:
        claim: Optional[object] = getattr(own, name)
        if claim not in ("", None) and claim != getattr(real, name):
            shown = repr(claim)
            parts.append(f"{name}={shown if len(shown) <= 80 else shown[:79] + '…'}")
    return ", ".join(parts)
