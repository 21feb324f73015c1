"""Scores over a window: pure functions of ``HistoryRun``/``HistoryEntry`` objects.

One pass over the window's entries tallies every test; nothing here opens the
store, so the same functions score a window read from SQLite or built in a test.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Optional

from flakewarden.model.history import HistoryEntry, HistoryRun
from flakewarden.model.scores import BROKEN, FLAKY, HEALTHY, NEW, Figures, TestScore

#: ``broken``: the test failed every attempt in its most recent runs, up to this many.
BROKEN_RUNS = 3
_NEVER = 1 << 62


class Tally:
    """Running counts of one test; run indexes count from 0, the newest run."""

    __slots__ = (
        "clean",
        "environment",
        "fa",
        "first_failure",
        "flaky",
        "hard",
        "hard_at",
        "newest",
        "oldest",
        "runs",
    )

    def __init__(self, at: int) -> None:
        self.runs = self.fa = self.flaky = self.hard = 0
        self.environment = 0  # runs whose every failure was the environment's, counted apart
        self.newest = self.oldest = at
        self.first_failure = -1  # index of the oldest first-attempt failure
        self.clean = _NEVER  # index of the newest run it did not fail every attempt of
        self.hard_at: list[int] = []

    def figures(self) -> Figures:
        return Figures(self.runs, self.fa, self.flaky, self.hard)

    def streak(self) -> int:
        """How many of its newest runs in a row failed every attempt."""
        return sum(1 for at in self.hard_at if at < self.clean)


def tally(
    runs: Sequence[HistoryRun],
    entries: Iterable[HistoryEntry],
    environment: Mapping[tuple[str, str], int] = {},
) -> dict[str, Tally]:
    """Counts per test over ``runs`` (newest first); entries of other runs and skips are ignored.

    ``environment``: ``(run key, test id)`` -> failures that were the environment's
    (``failures.environment_failures``); an entry all of whose failures were is counted
    apart, in ``environment``, not as a run of the test.

    The definition of the counts: ``tally_query.tally_store`` reads the same figures
    lean from SQLite, and a test checks the two agree on a real database.
    """
    index = {run.run_key: n for n, run in enumerate(runs)}
    found: dict[str, Tally] = {}
    for entry in entries:
        at = index.get(entry.run_key)
        if at is None or entry.attempts <= 0 or entry.outcome == "skipped":
            continue
        t = found.get(entry.test_id)
        if t is None:
            t = found[entry.test_id] = Tally(at)
        if at < t.newest:
            t.newest = at
        elif at > t.oldest:
            t.oldest = at
        if entry.failures and environment.get((entry.run_key, entry.test_id)) == entry.failures:
            t.environment += 1
            continue
        t.runs += 1
        hard = entry.failures >= entry.attempts
        if entry.first_attempt_failed:
            t.fa += 1
            if hard:
                t.hard += 1
                t.hard_at.append(at)
            else:
                t.flaky += 1
            if at > t.first_failure:
                t.first_failure = at
        if not (hard and entry.first_attempt_failed) and at < t.clean:
            t.clean = at
    return found


def state_of(t: Tally, min_runs: int) -> str:
    """``broken`` > ``new`` > ``flaky`` > ``healthy``: the first that applies."""
    streak = t.streak()
    if streak >= 1 and streak >= min(BROKEN_RUNS, t.runs):
        return BROKEN
    if t.runs < min_runs:
        return NEW
    return FLAKY if t.fa else HEALTHY


def _started(run: HistoryRun) -> str:
    return str(run.context.started_at or "")


def score_tallies(
    runs: Sequence[HistoryRun],
    main: dict[str, Tally],
    *,
    min_runs: int,
    window: str,
    pull_runs: Sequence[HistoryRun] = (),
    pulls: Optional[dict[str, Tally]] = None,
    previous: Optional[dict[str, Tally]] = None,
) -> dict[str, TestScore]:
    """The scores from tallies already counted (by ``tally`` or in SQL)."""
    pulls = pulls or {}
    empty = Figures()

    def before(test_id: str) -> Optional[Figures]:
        if previous is None:
            return None
        t = previous.get(test_id)
        return t.figures() if t is not None else empty

    scores: dict[str, TestScore] = {}
    for test_id, t in main.items():
        p = pulls.get(test_id)
        scores[test_id] = TestScore(
            test_id=test_id,
            window=window,
            figures=t.figures(),
            first_seen=_started(runs[t.oldest]),
            last_seen=_started(runs[t.newest]),
            first_failure=_started(runs[t.first_failure]) if t.first_failure >= 0 else "",
            state=state_of(t, min_runs),
            pull_requests=p.figures() if p is not None else empty,
            previous=before(test_id),
            environment_runs=t.environment,
        )
    for test_id, p in pulls.items():
        if test_id not in scores:
            scores[test_id] = TestScore(
                test_id=test_id,
                window=window,
                figures=empty,
                first_seen=_started(pull_runs[p.oldest]),
                last_seen=_started(pull_runs[p.newest]),
                first_failure="",
                state=NEW,
                pull_requests=p.figures(),
                previous=before(test_id),
            )
    return scores
