"""2, 3 and 5 concurrent ``flakewarden issues`` processes filing one flake: exact counts.

Real subprocesses against the loopback emulator; each trial forces the race
(every filer lists before any writes) and varies the order of the writes. The
count is checked twice: in the marker (the cache) and recounted from the
issue's records, the append-only truth.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.filer_race import race

# A few forced races each: the 20-trial figures come from benchmarks/bench_concurrent_filers.py.
TRIALS = {2: 2, 3: 1, 5: 1}


@pytest.mark.parametrize("filers", sorted(TRIALS))
def test_concurrent_filers_of_a_new_flake_leave_one_issue_with_every_hit(
    tmp_path: Path, filers: int
) -> None:
    for seed in range(TRIALS[filers]):
        outcome = race(tmp_path, filers, seed)
        assert outcome.exact, (seed, outcome)
        assert outcome.hits == filers
        # Every closed duplicate says its hits were added, and names the one open issue.
        assert outcome.claims == len(outcome.duplicates_of) == filers - 1
        assert not any("warning" in err for err in outcome.stderr), outcome.stderr


@pytest.mark.parametrize("filers", [3, 5])
def test_concurrent_filers_of_an_existing_flake_count_every_hit(
    tmp_path: Path, filers: int
) -> None:
    for seed in range(1):
        outcome = race(tmp_path, filers, seed, existing=True)
        assert outcome.exact, (seed, outcome)
        assert outcome.hits == filers + 1 and outcome.duplicates_of == []
        assert not any("warning" in err for err in outcome.stderr), outcome.stderr


def test_one_report_published_by_three_jobs_at_once_counts_once(tmp_path: Path) -> None:
    """Re-run jobs publish the report of a run already counted: its key is the same."""
    for existing in (False, True):
        outcome = race(tmp_path, 3, 7, existing=existing, same_report=True)
        assert outcome.exact, outcome
        assert outcome.hits == 1 + int(existing)
