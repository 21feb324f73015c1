"""The vocabulary of the flake history: where a run ran, and what each test did in it.

``RunContext`` is recorded by ``flakewarden run`` in ``report.json``; the history
store turns each ingested report into one ``HistoryRun`` and one ``HistoryEntry``
per test, and the scores are computed from those alone.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

from flakewarden.model.outcomes import Outcome


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _number(value: Any) -> Optional[int]:
    """A positive integer, or None for anything else (an absent or malformed value)."""
    if isinstance(value, bool):
        return None
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number if number > 0 else None


@dataclasses.dataclass(frozen=True)
class RunContext:
    """Where and when one ``flakewarden run`` ran: CI coordinates when it ran in GitHub Actions.

    Empty strings and None stand for "unknown": a run on a laptop knows only its start
    time, OS, Python and flakewarden version.
    """

    repository: str = ""  # owner/name
    workflow: str = ""  # the workflow's name
    run_id: Optional[int] = None
    run_attempt: Optional[int] = None
    job: str = ""  # the job's id in the workflow file
    job_name: str = ""  # the matrix entry (FLAKEWARDEN_JOB_NAME / --job-name)
    event: str = ""  # push, pull_request, schedule, ...
    branch: str = ""  # the branch pushed to, or a pull request's head branch
    base_branch: str = ""  # a pull request's base branch
    pr_number: Optional[int] = None
    commit: str = ""
    started_at: str = ""  # ISO 8601, UTC
    os: str = ""
    python: str = ""
    flakewarden_version: str = ""

    @property
    def on_github(self) -> bool:
        return bool(self.repository) and self.run_id is not None

    @property
    def is_pull_request(self) -> bool:
        """A run for a pull request: kept apart from the branch's own runs."""
        return self.pr_number is not None or self.event in ("pull_request", "pull_request_target")

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: Any) -> RunContext:
        """Lenient: unknown keys are ignored and malformed values read as unknown."""
        if not isinstance(data, dict):
            return cls()
        return cls(
            repository=_text(data.get("repository")),
            workflow=_text(data.get("workflow")),
            run_id=_number(data.get("run_id")),
            run_attempt=_number(data.get("run_attempt")),
            job=_text(data.get("job")),
            job_name=_text(data.get("job_name")),
            event=_text(data.get("event")),
            branch=_text(data.get("branch")),
            base_branch=_text(data.get("base_branch")),
            pr_number=_number(data.get("pr_number")),
            commit=_text(data.get("commit")),
            started_at=_text(data.get("started_at")),
            os=_text(data.get("os")),
            python=_text(data.get("python")),
            flakewarden_version=_text(data.get("flakewarden_version")),
        )


def run_key(context: RunContext, command: list[str], rootdir: str) -> str:
    """The stable key of one run attempt of one job: the same report always gets the same key.

    A GitHub run is known by its repository, run id, attempt, job and matrix name (the
    start time tells apart two ``flakewarden run`` in one job); a local run by its start
    time and a digest of its command and root directory.
    """
    if context.on_github:
        return (
            f"github:{context.repository}/{context.run_id}/{context.run_attempt or 1}"
            f"/{context.job}/{context.job_name}@{context.started_at}"
        )
    import hashlib  # here: the run's own path never needs it (measured in its start-up)

    digest = hashlib.sha256("\0".join([rootdir, *command]).encode("utf-8", "surrogatepass"))
    return f"local:{context.started_at}/{digest.hexdigest()[:16]}"


@dataclasses.dataclass(frozen=True)
class HistoryRun:
    """One ingested run attempt of one job, with the counts the scores need to judge it."""

    run_key: str
    context: RunContext
    tests: int  # tests in the run (skipped included)
    first_attempt_failures: int  # tests whose first attempt failed
    hard_failures: int  # tests that failed every attempt
    source: str  # a report dir path, or github:run/<id>/artifact/<id>
    flaky: int = 0  # tests that failed and then passed
    cutoff: bool = False  # more failures than --max-failures: nothing was rerun
    interrupted: bool = False
    ingested_at: str = ""
    # What the report said of its own run where that differs from the run it was
    # downloaded from (``history ingest --from-github``): untrusted detail, never a key.
    claimed: str = ""


@dataclasses.dataclass
class HistoryEntry:
    """One test in one ``HistoryRun``.

    Not frozen, though nothing should change one: a window of a large suite is millions
    of entries, and a frozen dataclass takes four times as long to build.
    """

    test_id: str
    run_key: str
    outcome: Outcome  # the final outcome across the run's attempts
    first_attempt_failed: bool
    attempts: int  # how many attempts the test ran in
    failures: int  # how many of them failed
    duration: float  # seconds, over every attempt
    attempt_outcomes: str = ""  # one letter per attempt: p f e s c (see history/schema.py)


# ``TestScore`` (a test's figures over a window) is in ``model/scores.py`` with the figures
# and the window it is made of: imported from there, so a run's start-up never loads it.
