"""Failure groups ranked by tests, then runs hit; each with its trend, a stopped one said so."""

from __future__ import annotations

from flakewarden.dashboard.groups import group_failures
from flakewarden.history.failures import Failure, SignatureRow
from flakewarden.model.signatures import Signature

REFUSED = Signature("ConnectionRefusedError", "[Errno N] Connection refused", "tests/db.py::q")
ASSERTED = Signature("AssertionError", "stale cache", "tests/test_c.py::test_c")
RUNS = {n: (f"2026-01-{n:02d}T00:00:00Z", "") for n in range(1, 26)}  # run 25 is the newest


def _groups(failures: list[Failure]) -> dict[str, object]:
    rows = {1: SignatureRow(1, REFUSED, "tb"), 2: SignatureRow(2, ASSERTED, "tb")}
    found = group_failures(failures, rows, {1: "t1", 2: "t2", 3: "t3"}, RUNS)
    return {g.signature.exception: g for g in found}


def test_a_cause_no_recent_run_saw_has_stopped_and_one_seen_more_lately_rises() -> None:
    old_outage = [Failure(run, test, 1, 1, "refused") for run in (1, 2, 3) for test in (1, 2)]
    lately = [Failure(run, 3, 1, 2, "stale") for run in (9, 14, 18, 20, 24)]
    groups = _groups([*old_outage, *lately])
    refused, asserted = groups["ConnectionRefusedError"], groups["AssertionError"]
    assert (refused.trend, refused.trend_text) == (
        "stopped",
        "stopped: not seen in the newest 10 runs",
    )
    assert refused.environment == "type:ConnectionRefusedError" and not asserted.environment
    assert (asserted.trend, asserted.trend_text) == (
        "rising",
        "rising: 3 of the newest 10 runs, 2 before",  # runs 18, 20, 24; then 9, 14
    )
    assert refused.to_json()["environment"] is True and refused.to_json()["trend"] == "stopped"


def test_groups_rank_by_tests_then_runs_hit() -> None:
    one_test_many_runs = [Failure(run, 3, 1, 2, "stale") for run in range(1, 20)]
    two_tests_one_run = [Failure(25, test, 1, 1, "refused") for test in (1, 2)]
    found = group_failures(
        [*one_test_many_runs, *two_tests_one_run],
        {1: SignatureRow(1, REFUSED, "tb"), 2: SignatureRow(2, ASSERTED, "tb")},
        {1: "t1", 2: "t2", 3: "t3"},
        RUNS,
    )
    assert [g.signature for g in found] == [REFUSED, ASSERTED]
    assert [(g.tests_total, g.runs) for g in found] == [(2, 1), (1, 19)]
    assert found[0].trend == "rising" and found[1].trend == "falling"
