"""Turning the store's rows back into the model, and small query helpers."""

from __future__ import annotations

import dataclasses
import datetime
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any, Optional, Union

from flakewarden.history import schema
from flakewarden.model import HistoryRun, Outcome, RunContext, RunReport, TestResult

RUN_COLUMNS = (
    "run_key, repository, workflow, run_id, run_attempt, job, job_name, event, branch,"
    " base_branch, pr_number, commit_sha, started_at, os, python, flakewarden_version, tests,"
    " first_attempt_failures, hard_failures, flaky, cutoff, interrupted, source, ingested_at,"
    " claimed"
)
CHUNK = 500  # bound parameters per IN (...) query, well under SQLite's limit


def history_run(row: Sequence[Any]) -> HistoryRun:
    (key, repository, workflow, run_id, attempt, job, job_name, event, branch, base) = row[:10]
    (pr, commit, started, os_name, python, version, tests, first, hard, flaky) = row[10:20]
    cutoff, interrupted, source, ingested, claimed = row[20:25]
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
        claimed=claimed,
    )


def marks(values: Sequence[Any]) -> str:
    return ", ".join("?" * len(values))


def chunks(values: Sequence[Any]) -> Iterator[list[Any]]:
    for start in range(0, len(values), CHUNK):
        yield list(values[start : start + CHUNK])


@dataclasses.dataclass
class EncodedTests:
    """A run's tests as the entries table stores them, with the run's counts."""

    outcomes: list[int]
    words: list[str]
    durations_ms: list[int]
    first_attempt_failures: int
    hard_failures: int
    flaky: int


def encode_tests(tests: Sequence[TestResult]) -> EncodedTests:
    """Outcome codes, attempt words and durations, in one pass (ingest's hot loop: most
    tests ran once, and take the short path)."""
    letters = schema.ATTEMPT_LETTERS
    codes = schema.OUTCOME_CODES
    words: list[str] = []
    durations: list[int] = []
    for test in tests:
        attempts = test.attempts
        if len(attempts) == 1:
            only = attempts[0]
            words.append(letters[only.outcome])
            durations.append(int(only.duration * 1000 + 0.5))
        else:
            words.append("".join([letters[a.outcome] for a in attempts]))
            durations.append(int(sum(a.duration for a in attempts) * 1000 + 0.5))
    failing = schema.FAILURE_LETTERS
    first = hard = 0
    for word, count in Counter(words).items():
        if word[:1] in failing:
            first += count
            if all(letter in failing for letter in word):
                hard += count
    outcomes = [codes[test.outcome] for test in tests]
    return EncodedTests(
        outcomes=outcomes,
        words=words,
        durations_ms=durations,
        first_attempt_failures=first,
        hard_failures=hard,
        flaky=outcomes.count(codes[Outcome.FLAKY]),
    )


def since_text(value: Union[str, datetime.datetime, None]) -> Optional[str]:
    if value is None or isinstance(value, str):
        return value
    if value.tzinfo is None:
        value = value.replace(tzinfo=datetime.timezone.utc)
    return value.astimezone(datetime.timezone.utc).isoformat(timespec="seconds")


def report_context(report: RunReport) -> RunContext:
    """The report's recorded context; for a report written before contexts, what it knows."""
    if report.context is not None:
        return report.context
    return RunContext(started_at=report.started_at, flakewarden_version=report.version)


class Decoded(dict[str, tuple[bool, int, int]]):
    """What an attempts word says (first attempt failed, attempts, failures), worked out once
    per distinct word: a window holds millions of entries and a handful of words."""

    def __missing__(self, word: str) -> tuple[bool, int, int]:
        failing = schema.FAILURE_LETTERS
        value = (word[:1] in failing, len(word), sum(1 for letter in word if letter in failing))
        self[word] = value
        return value
