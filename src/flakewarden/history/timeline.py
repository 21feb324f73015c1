"""A test's runs in order: what each run did with it, read for a chosen few tests.

The dashboard draws each flaky test's run-history strip and its weekly trend. Reading
every entry of a large history builds millions of objects; these read only the cells
asked for, through the entries' primary key (run, test), so the cost follows the tests
shown, not the size of the file.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from flakewarden.history import schema
from flakewarden.model import Outcome
from flakewarden.model.history import HistoryRun

if TYPE_CHECKING:
    from flakewarden.history.store import HistoryStore

CHUNK = 400
_SKIPPED = schema.OUTCOME_CODES[Outcome.SKIPPED]
_QUARANTINED = schema.OUTCOME_CODES[Outcome.QUARANTINED]


def run_numbers(store: HistoryStore, runs: Sequence[HistoryRun]) -> list[int]:
    """Each run's database id, in the order given; -1 for a run not in the store."""
    keys = [run.run_key for run in runs]
    ids: dict[str, int] = {}
    for start in range(0, len(keys), CHUNK):
        part = keys[start : start + CHUNK]
        marks = ", ".join("?" * len(part))
        ids.update(store.read(f"SELECT run_key, id FROM runs WHERE run_key IN ({marks})", part))
    return [ids.get(key, -1) for key in keys]


def test_numbers(store: HistoryStore) -> dict[str, int]:
    """Every test's database id by its test id."""
    return {name: number for number, name in store.read("SELECT id, test_id FROM tests")}


def failing_tests(store: HistoryStore, runs: Sequence[int]) -> dict[int, int]:
    """Tests whose first attempt failed in any of ``runs``, with how many times."""
    counts: dict[int, int] = {}
    for start in range(0, len(runs), CHUNK):
        part = [r for r in runs[start : start + CHUNK] if r >= 0]
        if not part:
            continue
        rows = store.read(
            f"SELECT test, attempts FROM entries WHERE run IN ({', '.join('?' * len(part))})"
            " AND attempts != 'p' AND attempts != 's' AND attempts != ''",
            part,
        )
        for test, word in rows:
            if word[:1] in schema.FAILURE_LETTERS:
                counts[test] = counts.get(test, 0) + 1
    return counts


def cell(outcome: int, word: str) -> str:
    """One run of one test as one letter: ``p`` passed, ``x`` flaky (failed, then passed),
    ``f`` failed every attempt, ``q`` failed while quarantined, ``s`` skipped."""
    if outcome == _SKIPPED or not word:
        return "s"
    failing = schema.FAILURE_LETTERS
    if word[0] not in failing:
        return "p"
    if outcome == _QUARANTINED:
        return "q"
    return "f" if all(letter in failing for letter in word) else "x"


def cells(
    store: HistoryStore, runs: Sequence[int], tests: Sequence[int]
) -> dict[int, dict[int, str]]:
    """Per test of ``tests``, the letter (``cell``) of each run of ``runs`` it ran in."""
    found: dict[int, dict[int, str]] = {test: {} for test in tests}
    chosen = [r for r in runs if r >= 0]
    if not chosen or not tests:
        return found
    for start in range(0, len(tests), CHUNK):
        part = list(tests[start : start + CHUNK])
        marks = ", ".join("?" * len(part))
        for at in range(0, len(chosen), CHUNK // 4):
            some = chosen[at : at + CHUNK // 4]
            rows = store.read(
                "SELECT run, test, outcome, attempts FROM entries"
                f" WHERE run IN ({', '.join('?' * len(some))}) AND test IN ({marks})",
                [*some, *part],
            )
            for run, test, outcome, word in rows:
                found[test][run] = cell(outcome, word)
    return found
