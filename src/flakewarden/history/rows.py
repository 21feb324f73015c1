"""Turning the store's rows back into the model, and small query helpers."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from flakewarden.model import HistoryRun, RunContext

RUN_COLUMNS = (
    "run_key, repository, workflow, run_id, run_attempt, job, job_name, event, branch,"
    " base_branch, pr_number, commit_sha, started_at, os, python, flakewarden_version, tests,"
    " first_attempt_failures, hard_failures, flaky, cutoff, interrupted, source, ingested_at"
)
CHUNK = 500  # bound parameters per IN (...) query, well under SQLite's limit


def history_run(row: Sequence[Any]) -> HistoryRun:
    (key, repository, workflow, run_id, attempt, job, job_name, event, branch, base) = row[:10]
    (pr, commit, started, os_name, python, version, tests, first, hard, flaky) = row[10:20]
    cutoff, interrupted, source, ingested = row[20:24]
    context = RunContext(
        repository=repository,
        workflow=workflow,
        run_id=run_id,
        run_attempt=attempt,
        job=job,
        job_name=job_name,
        event=event,
        branch=branch,
        base_branch=base,
        pr_number=pr,
        commit=commit,
        started_at=started,
        os=os_name,
        python=python,
        flakewarden_version=version,
    )
    return HistoryRun(
        run_key=key,
        context=context,
        tests=tests,
        first_attempt_failures=first,
        hard_failures=hard,
        source=source,
        flaky=flaky,
        cutoff=bool(cutoff),
        interrupted=bool(interrupted),
        ingested_at=ingested,
    )


def marks(values: Sequence[Any]) -> str:
    return ", ".join("?" * len(values))


def chunks(values: Sequence[Any]) -> Iterator[list[Any]]:
    for start in range(0, len(values), CHUNK):
        yield list(values[start : start + CHUNK])
