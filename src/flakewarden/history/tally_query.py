"""The scores' tally read lean from SQLite: what ``scores.tally`` counts, without building
half a million ``HistoryEntry`` objects to count 10,000 tests over 50 runs.

Nearly every entry is one passed attempt (``p``): for those, each run's test
numbers come back as one ``group_concat`` string, and the runs, newest and
oldest position are counted by the C loops of ``Counter`` and ``dict``. Every
other entry (a failure, a rerun, an error) comes back as a row and is counted
as ``scores.tally`` does. A test checks the two agree on a real database.
"""

from __future__ import annotations

import collections
from collections.abc import Sequence
from typing import TYPE_CHECKING, Optional

from flakewarden.history import schema
from flakewarden.history.failures import environment_failures
from flakewarden.history.tallies import Tally
from flakewarden.model import Outcome
from flakewarden.model.environment import DEFAULT_PATTERNS
from flakewarden.model.history import HistoryRun

if TYPE_CHECKING:
    from flakewarden.history.store import HistoryStore

#: Run keys or ids per query, within SQLite's oldest limit of 999 bound values.
CHUNK = 400
_SKIPPED = schema.OUTCOME_CODES[Outcome.SKIPPED]
_FAILING = schema.FAILURE_LETTERS


def _run_ids(store: HistoryStore, runs: Sequence[HistoryRun]) -> list[int]:
    """The database id of each run, in the order given (newest first); -1 when absent."""
    keys = [r.run_key for r in runs]
    ids: dict[str, int] = {}
    for start in range(0, len(keys), CHUNK):
        part = keys[start : start + CHUNK]
        marks = ", ".join("?" * len(part))
        ids.update(store.read(f"SELECT run_key, id FROM runs WHERE run_key IN ({marks})", part))
    return [ids.get(key, -1) for key in keys]


def test_names(store: HistoryStore) -> dict[str, str]:
    """Every test's id by its number (as ``group_concat`` writes it): read once per window."""
    return {str(n): name for n, name in store.read("SELECT id, test_id FROM tests")}


def tally_store(
    store: HistoryStore,
    runs: Sequence[HistoryRun],
    names: Optional[dict[str, str]] = None,
    environment: Sequence[str] = DEFAULT_PATTERNS,
) -> dict[str, Tally]:
    """What ``scores.tally(runs, store.entries(...), environment)`` returns, read lean.

    ``environment``: the patterns of the environment's causes, whose runs are counted apart.
    """
    if not runs:
        return {}
    ids = _run_ids(store, runs)
    outages = environment_failures(store, [run for run in ids if run >= 0], environment)
    passed: list[list[str]] = []
    for run in ids:
        [(joined,)] = store.read(
            "SELECT group_concat(test) FROM entries WHERE run = ? AND attempts = 'p'", [run]
        )
        passed.append(joined.split(",") if joined else [])
    counts: collections.Counter[str] = collections.Counter()
    oldest: dict[str, int] = {}
    newest: dict[str, int] = {}
    for pos, tests in enumerate(passed):
        counts.update(tests)
        oldest.update(dict.fromkeys(tests, pos))
    for pos in range(len(passed) - 1, -1, -1):
        newest.update(dict.fromkeys(passed[pos], pos))
    names = names if names is not None else test_names(store)
    found: dict[str, Tally] = {}
    for number, n in counts.items():
        t = found[names[number]] = Tally(newest[number])
        t.runs = n
        t.oldest = oldest[number]
        t.clean = t.newest  # a passed run is one it did not fail every attempt of
    position = {run: pos for pos, run in enumerate(ids) if run >= 0}
    for start in range(0, len(ids), CHUNK):
        part = [run for run in ids[start : start + CHUNK] if run >= 0]
        if not part:
            continue
        rows = store.read(
            f"SELECT run, test, attempts FROM entries WHERE run IN ({', '.join('?' * len(part))})"
            f" AND attempts != 'p' AND attempts != '' AND outcome != {_SKIPPED}",
            part,
        )
        for run, number, word in rows:
            at = position[run]
            test_id = names[str(number)]
            t = found.get(test_id) or found.setdefault(test_id, Tally(at))
            t.newest = min(t.newest, at)
            t.oldest = max(t.oldest, at)
            failures = sum(letter in _FAILING for letter in word)
            if failures and outages.get((run, number)) == failures:
                t.environment += 1
                continue
            t.runs += 1
            first_failed = word[0] in _FAILING
            every = all(letter in _FAILING for letter in word)
            if first_failed:
                t.fa += 1
                if every:
                    t.hard += 1
                    t.hard_at.append(at)
                else:
                    t.flaky += 1
                t.first_failure = max(t.first_failure, at)
            if not (first_failed and every):
                t.clean = min(t.clean, at)
    return found
