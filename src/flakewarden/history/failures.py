"""What each failed attempt raised, kept by signature; and the quarantined set of each run.

Written inside ``HistoryStore.ingest``'s transaction, read by the dashboard to group
failures across tests. A run where the suite fell over can fail every test on every
attempt: at most ``MAX_PER_RUN`` failures of one run are kept (the first attempt's
first), which is plenty to name its causes.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple, Optional, Protocol

from flakewarden.model import RunReport
from flakewarden.model.causes import cause_id
from flakewarden.model.environment import environment_pattern
from flakewarden.model.signatures import Signature, signature

MAX_PER_RUN = 1_000
EXAMPLE_LIMIT = 8_000  # characters of a signature's example traceback (its end: the raise)
MESSAGE_LIMIT = 500


class Reader(Protocol):
    """What the readers below need of the store (``HistoryStore.read``): rows of a query.

    The store writes through ``write_failures``; naming only this here keeps the two
    modules from importing each other.
    """

    def read(self, query: str, params: Sequence[Any] = ()) -> list[Any]: ...


class Failure(NamedTuple):
    """One failed attempt of one test in one run, as the dashboard reads it back."""

    run: int
    test: int
    attempt: int
    signature: int
    message: str


class SignatureRow(NamedTuple):
    id: int
    signature: Signature
    example: str


def _clip_example(text: str) -> str:
    if len(text) <= EXAMPLE_LIMIT:
        return text
    return f"[... {len(text) - EXAMPLE_LIMIT:,} characters left out ...]\n" + text[-EXAMPLE_LIMIT:]


def write_failures(
    db: sqlite3.Connection, run: Optional[int], ids: Mapping[str, int], report: RunReport
) -> None:
    """Add the run's failed attempts and its quarantined set (inside the caller's transaction)."""
    if run is None:
        return
    found = []
    for test in report.tests:
        for attempt in test.failures:
            found.append((attempt.attempt, test, attempt))
    found.sort(key=lambda item: item[0])  # first attempts first, should the cap bite
    rows = []
    examples: dict[str, tuple[Signature, str]] = {}
    for _, test, attempt in found[:MAX_PER_RUN]:
        sig = attempt.signature or signature(attempt.longrepr, attempt.message, attempt.raised)
        examples.setdefault(sig.key, (sig, attempt.longrepr or attempt.message))
        rows.append((ids[test.id], attempt.attempt, sig.key, attempt.message[:MESSAGE_LIMIT]))
    if examples:
        db.executemany(
            "INSERT OR IGNORE INTO signatures (signature, exception, message, frame, example)"
            " VALUES (?, ?, ?, ?, ?)",
            [
                (key, sig.exception, sig.message, sig.frame, _clip_example(text))
                for key, (sig, text) in examples.items()
            ],
        )
        numbers: dict[str, int] = {}
        keys = list(examples)
        for start in range(0, len(keys), 400):
            chunk = keys[start : start + 400]
            marks = ", ".join("?" * len(chunk))
            query = f"SELECT signature, id FROM signatures WHERE signature IN ({marks})"
            numbers.update(db.execute(query, chunk).fetchall())
        db.executemany(
            "INSERT OR IGNORE INTO failures VALUES (?, ?, ?, ?, ?)",
            [(run, test, attempt, numbers[key], text) for test, attempt, key, text in rows],
        )
    if report.quarantine_known:
        db.executemany(
            "INSERT OR IGNORE INTO quarantined VALUES (?, ?)",
            [(run, key) for key in dict.fromkeys(report.quarantine_known)],
        )


def failures(store: Reader, runs: Optional[Iterable[int]] = None) -> list[Failure]:
    """Every failure kept, or only those of the given runs (database ids)."""
    query = "SELECT run, test, attempt, signature, message FROM failures"
    if runs is None:
        return [Failure(*row) for row in store.read(query)]
    found: list[Failure] = []
    chosen = list(runs)
    for start in range(0, len(chosen), 400):
        chunk = chosen[start : start + 400]
        where = f" WHERE run IN ({', '.join('?' * len(chunk))})"
        found += [Failure(*row) for row in store.read(query + where, chunk)]
    return found


def signatures(store: Reader, numbers: Iterable[int]) -> dict[int, SignatureRow]:
    """The signatures of the given ids, with their example traceback."""
    found: dict[int, SignatureRow] = {}
    chosen = list(dict.fromkeys(numbers))
    for start in range(0, len(chosen), 400):
        chunk = chosen[start : start + 400]
        rows = store.read(
            "SELECT id, exception, message, frame, example FROM signatures"
            f" WHERE id IN ({', '.join('?' * len(chunk))})",
            chunk,
        )
        for number, exception, message, frame, example in rows:
            found[number] = SignatureRow(number, Signature(exception, message, frame), example)
    return found


def cause_runs(store: Reader, run_keys: Iterable[str]) -> dict[str, set[str]]:
    """The runs (by key) each cause hit among ``run_keys``, by cause id (``cause_id``).

    The digest's cause trends compare the runs a cause hit in one window with the window
    before; the cause id is the one its cause issue is filed under.
    """
    found: dict[int, set[str]] = {}
    chosen = list(dict.fromkeys(run_keys))
    for start in range(0, len(chosen), 400):
        chunk = chosen[start : start + 400]
        rows = store.read(
            "SELECT DISTINCT runs.run_key, failures.signature FROM failures"
            " JOIN runs ON runs.id = failures.run"
            f" WHERE runs.run_key IN ({', '.join('?' * len(chunk))})",
            chunk,
        )
        for run_key, number in rows:
            found.setdefault(number, set()).add(str(run_key))
    by_cause: dict[str, set[str]] = {}
    for number, row in signatures(store, found).items():
        by_cause.setdefault(cause_id(row.signature), set()).update(found[number])
    return by_cause


def environment_failures(
    store: Reader, runs: Sequence[int], patterns: Sequence[str]
) -> dict[tuple[int, int], int]:
    """``(run, test)`` -> failures kept, for the entries every kept failure of which was a
    cause of the environment's (``model/environment.py``).

    The scores count such an entry apart when it kept every failure its attempts show: a
    test is not made flaky, nor quarantined, by its database's outage.
    """
    if not patterns:
        return {}
    kept: dict[tuple[int, int], int] = {}
    other: set[tuple[int, int]] = set()
    verdicts: dict[int, bool] = {}
    for start in range(0, len(runs), 400):
        chunk = list(runs[start : start + 400])
        rows = store.read(
            "SELECT f.run, f.test, s.id, s.exception, s.message, s.frame FROM failures f"
            " JOIN signatures s ON s.id = f.signature"
            f" WHERE f.run IN ({', '.join('?' * len(chunk))})",
            chunk,
        )
        for run, test, number, exception, message, frame in rows:
            environment = verdicts.get(number)
            if environment is None:
                sig = Signature(exception, message, frame)
                environment = verdicts[number] = bool(environment_pattern(sig, patterns))
            if environment:
                kept[(run, test)] = kept.get((run, test), 0) + 1
            else:
                other.add((run, test))
    return {key: count for key, count in kept.items() if key not in other}


def quarantined(store: Reader, run: int) -> set[str]:
    """The id keys (``model.id_key``) of the tests quarantined when ``run`` ran."""
    return {key for (key,) in store.read("SELECT test_key FROM quarantined WHERE run = ?", [run])}
