"""2, 3 and 5 concurrent ``flakewarden issues`` processes filing one new flake: exact counts.

Real subprocesses against the loopback emulator; each trial forces the race
(every filer lists before any creates) and varies the order of the writes.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from filer_race import race

TRIALS = {2: 3, 3: 4, 5: 3}


@pytest.mark.parametrize("filers", sorted(TRIALS))
def test_concurrent_filers_leave_one_issue_with_every_hit(tmp_path: Path, filers: int) -> None:
    for seed in range(TRIALS[filers]):
        outcome = race(tmp_path, filers, seed)
        assert outcome.exact, (seed, outcome)
        # Every closed duplicate says its hits were added, and the winner lists each of them.
        assert outcome.claims == filers - 1
        assert not any("warning" in err for err in outcome.stderr), outcome.stderr
