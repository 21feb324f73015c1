"""The load arms' levels: escalated while the test's measured slowdown is short of 4x and rising."""

from __future__ import annotations

from flakewarden.stress.load import LoadArm

BASELINE = [0.010] * 9  # the test takes 10 ms at baseline


def test_a_load_arm_escalates_until_the_test_runs_four_times_slower() -> None:
    arm = LoadArm("cpu-load", cores=2)
    assert arm.burners == 2
    for duration, escalated, burners in ((0.015, True, 4), (0.025, True, 8), (0.045, False, 8)):
        arm.record([duration] * 5)
        assert arm.escalate(BASELINE) is escalated
        assert arm.burners == burners
    summary = arm.summary(BASELINE)
    assert summary["reached"] is True and summary["slowdown"] == 4.5
    assert [row["slowdown"] for row in summary["levels"]] == [1.5, 2.5, 4.5]  # type: ignore[index]


def test_an_escalation_that_does_not_slow_the_test_is_the_last() -> None:
    arm = LoadArm("throttle", cores=2)
    arm.record([0.011] * 5)
    assert arm.escalate(BASELINE) and arm.run_share == 0.1
    arm.record([0.012] * 5)  # twice the stops, hardly slower: its time is waiting
    assert not arm.escalate(BASELINE) and arm.run_share == 0.1
    assert "did not slow it further" in arm.statement(BASELINE)
    assert arm.summary(BASELINE)["reached"] is False


def test_a_test_shorter_than_a_time_slice_is_not_escalated() -> None:
    arm = LoadArm("cpu-load", cores=4)
    short = [0.0005] * 9
    arm.record([0.0006] * 5)
    assert not arm.escalate(short) and arm.burners == 4
    assert "shorter than a scheduler time slice" in arm.statement(short)


def test_the_last_level_is_the_last() -> None:
    arm = LoadArm("cpu-load", cores=1)
    for duration in (0.012, 0.016, 0.021):
        arm.record([duration] * 5)
        assert arm.escalate(BASELINE)
    arm.record([0.030] * 5)
    assert not arm.escalate(BASELINE) and arm.burners == 8
    assert "could not slow it that much" in arm.statement(BASELINE)
