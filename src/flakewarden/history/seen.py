"""Which tests a branch's own runs hold, and how long each took there.

Burn-in counts a collected test that the base branch never ran as new, whatever the
diff says (a test a data file or a plugin generates), and shares its budget by the
durations the branch measured.
"""

from __future__ import annotations

from typing import NamedTuple

from flakewarden.history.store import HistoryStore

# A pull request's runs are not the branch's: their head branch may share its name.
_BRANCH_RUNS = (
    "SELECT id FROM runs WHERE branch = ? AND pr_number IS NULL "
    "AND event NOT IN ('pull_request', 'pull_request_target')"
)


class BranchTests(NamedTuple):
    """The runs of a branch in the history and, per test id they hold, its mean seconds."""

    runs: int
    durations: dict[str, float]


def seen_on_branch(store: HistoryStore, branch: str) -> BranchTests:
    """Every test id that some run of ``branch`` (not for a pull request) recorded."""
    runs = int(store.read(f"SELECT count(*) FROM ({_BRANCH_RUNS})", [branch])[0][0])
    if not runs:
        return BranchTests(0, {})
    rows = store.read(
        "SELECT tests.test_id, avg(entries.duration_ms) FROM entries "
        "JOIN tests ON tests.id = entries.test "
        f"WHERE entries.run IN ({_BRANCH_RUNS}) GROUP BY entries.test",
        [branch],
    )
    return BranchTests(runs, {str(name): float(ms or 0) / 1000 for name, ms in rows})
