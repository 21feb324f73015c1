"""The stress phases' decisions as tables: given the arms' counts, which verdict and why.

Each decision is a pure function of real ``Arm`` and ``Verdict`` objects (and the
timing phase's real ``Sequential``), so no process runs: a row is counts in, a
verdict and the words of its reason out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

import pytest

from flakewarden.model.verdicts import (
    DETERMINISTIC,
    ERROR,
    FLAKY,
    INCONCLUSIVE,
    NON_IDEMPOTENT,
    NOT_REPRODUCIBLE,
    ORDER_DEPENDENT,
    PRECEDENCE,
    RACE,
    SEED_DEPENDENT,
)
from flakewarden.stress.isolation import (
    always_fails,
    deterministic_finding,
    needs_more_fresh_runs,
    non_idempotence,
    repeats_p_value,
)
from flakewarden.stress.load import LOAD_KNOBS, LoadArm
from flakewarden.stress.phase import Finding
from flakewarden.stress.sequential import Counts, Margin, Sequential
from flakewarden.stress.timing_verdict import TimingEvidence, conclude
from flakewarden.stress.verdict import Arm, Sample, Verdict
from flakewarden.stress.verdict_merge import merge_verdicts

# The knobs of a test in which no event loop ran and only switch-interval of the thread
# knobs is weighed: the rules below hold for any set, with the race threshold set by its size.
KNOBS = ("switch-interval", "cpu-load", "throttle")

TEST_ID = "tests/test_x.py::test_y"
WIDE = Margin(absolute=0.5, relative=0.5)  # bounds any knob in a few rounds


def fresh(runs: int, failures: int) -> Arm:
    """Fresh processes of one run each: every run is a first run."""
    return Arm(
        "isolation",
        "baseline",
        runs=runs,
        failures=failures,
        processes=runs,
        first_runs=runs,
        first_failures=failures,
    )


def repeated(first: tuple[int, int], repeats: tuple[int, int]) -> Arm:
    """In-process repeats: ``first`` is (failures, runs) of first runs, ``repeats`` of the rest."""
    return Arm(
        "isolation",
        "in-process",
        runs=first[1] + repeats[1],
        failures=first[0] + repeats[0],
        processes=first[1],
        repeat=5,
        first_runs=first[1],
        first_failures=first[0],
    )


# -- isolation and in-process repeats -------------------------------------------------


@pytest.mark.parametrize(
    ("isolation", "in_process", "leaked", "leaks", "why"),
    [
        # Every first run passed, every repeat failed, both processes leaked: p ~ 8e-6.
        (fresh(10, 0), repeated((0, 2), (8, 8)), 2, True, "repeats fail far more often"),
        # The same counts, but no process passed its first run and then failed: not proven.
        (fresh(10, 0), repeated((0, 2), (8, 8)), 0, False, "no process leaked"),
        # Repeats fail as often as first runs: the test fails, it does not leak.
        (fresh(10, 10), repeated((2, 2), (8, 8)), 0, False, "first runs fail as much"),
        # One failing repeat in eight: p = 8/20 = 0.4, not significant.
        (fresh(10, 0), repeated((0, 2), (1, 8)), 1, False, "one repeat is chance"),
        # Three in eight against none in twelve: p = C(8,3)/C(20,3) = 0.049 < 0.05.
        (fresh(10, 0), repeated((0, 2), (3, 8)), 2, True, "three repeats cross alpha"),
        # Two in eight: p = C(8,2)/C(20,2) = 0.147, short of alpha.
        (fresh(10, 0), repeated((0, 2), (2, 8)), 2, False, "two repeats fall short"),
    ],
)
def test_non_idempotence_is_repeats_failing_more_than_first_runs(
    isolation: Arm, in_process: Arm, leaked: int, leaks: bool, why: str
) -> None:
    found = non_idempotence(isolation, in_process, leaked)
    assert bool(found) is leaks, why
    p = repeats_p_value(isolation, in_process)  # what the repeats phase puts on its arm
    assert (p < 0.05 and leaked > 0) is leaks, why  # the rule, from the p-value alone
    if leaks:
        assert found["p_value"] == p
        assert found["repeat_failures"] == in_process.repeat_failures
        assert found["processes_passed_first_then_failed"] == leaked
        assert found["first_runs"] == isolation.first_runs + in_process.first_runs
        assert "Fisher" in str(found["rule"])


@pytest.mark.parametrize(
    ("isolation", "in_process", "always", "more"),
    [
        (fresh(10, 10), repeated((2, 2), (8, 8)), True, False),  # a real break so far
        (fresh(10, 10), repeated((2, 2), (5, 8)), True, True),  # a repeat passed: ask again
        (fresh(10, 9), repeated((2, 2), (5, 8)), False, False),  # a fresh run passed: flaky
        (fresh(0, 0), repeated((0, 0), (0, 0)), False, False),  # no runs prove nothing
    ],
)
def test_more_fresh_runs_only_when_every_first_run_failed_but_a_repeat_passed(
    isolation: Arm, in_process: Arm, always: bool, more: bool
) -> None:
    assert always_fails(isolation) is always
    assert needs_more_fresh_runs(always_fails(isolation), in_process) is more


@pytest.mark.parametrize(
    ("in_process", "swept", "says", "never_says"),
    [
        (repeated((2, 2), (8, 8)), False, "all 8 in-process repeats failed too", "although"),
        (repeated((2, 2), (5, 8)), False, "although 3 of 8 in-process repeats passed", "randomly"),
        (repeated((2, 2), (8, 8)), True, "every pytest-randomly seed tried failed too", "although"),
    ],
)
def test_a_real_break_says_what_the_repeats_and_seeds_showed(
    in_process: Arm, swept: bool, says: str, never_says: str
) -> None:
    finding = deterministic_finding(fresh(10, 10), in_process, swept=swept, clause="; CLAUSE")
    assert finding.verdict == DETERMINISTIC
    assert says in finding.reason and never_says not in finding.reason
    assert finding.reason.startswith("failed all 10 of its first runs in 10 fresh processes")
    assert finding.reason.endswith("; CLAUSE")
    assert not _verdict(finding).quarantine_allowed


# -- the timing conclusion -------------------------------------------------------------


Round = dict[str, list[tuple[int, int]]]  # arm -> each process's (failures, runs)


def _timing(
    rounds: Sequence[Round], *, margin: Margin = WIDE, fresh_only: bool = False
) -> tuple[TimingEvidence, list[Arm]]:
    per_process = 1 if fresh_only else 20
    arms = {name: Arm("timing", name, repeat=per_process) for name in ["baseline", *KNOBS]}
    evidence = TimingEvidence(
        arms=arms,
        sequential=Sequential(KNOBS, margin=margin),
        loads={k: LoadArm(k, 2) for k in LOAD_KNOBS},
        per_process=per_process,
        processes=1,
        fresh_only=fresh_only,
    )
    for shape in rounds:
        counts = {arm: [Counts(runs, failures) for failures, runs in p] for arm, p in shape.items()}
        evidence.sequential.add_round(counts)
        for arm, processes in counts.items():
            for c in processes:
                runs = [Sample(0, 0 if fresh_only else i, i < c.failures) for i in range(c.runs)]
                evidence.arms[arm] = evidence.arms[arm].grown(runs, processes=1)
        evidence.looks += 1
    evidence.ended_by = "budget"
    evidence.seconds = 60.0
    return evidence, list(evidence.arms.values())


def _same(failures: int, runs: int = 20, processes: int = 1) -> Round:
    return {arm: [(failures, runs)] * processes for arm in ["baseline", *KNOBS]}


def _under(knob: str, failures: int, runs: int = 20) -> Round:
    shape = _same(0, runs)
    shape[knob] = [(failures, runs)]
    return shape


LEAKS = {
    "repeat_runs": 8,
    "repeat_failures": 8,
    "rule": "one-sided Fisher exact test of in-process repeats against first runs",
}


@pytest.mark.parametrize(
    ("rounds", "margin", "fresh_only", "non_idempotent", "verdict", "says", "allowed"),
    [
        # The switch interval fails every run of every round while the baseline never does.
        ([_under("switch-interval", 20)] * 12, WIDE, False, {}, RACE, "climbs under", False),
        # The same rate everywhere, every knob bounded within a wide margin: flaky.
        ([_same(2)] * 12, WIDE, False, {}, FLAKY, "at a flat rate", True),
        # The same failures, but the default margin leaves every knob open: inconclusive.
        ([_same(2)] * 2, Margin(), False, {}, INCONCLUSIVE, "no rule was crossed", False),
        # No failure and every knob bounded: not reproducible, and quarantine allowed.
        ([_same(0)] * 12, WIDE, False, {}, NOT_REPRODUCIBLE, "Every knob is bounded", True),
        # No failure in too few runs: not reproducible, but quarantine refused.
        ([_same(0)] * 2, Margin(), False, {}, NOT_REPRODUCIBLE, "absence of evidence", False),
        # Fresh processes only, no first run failed: the known leak is the verdict.
        ([_same(0, 1, 20)] * 3, WIDE, True, LEAKS, NON_IDEMPOTENT, "leaks state", True),
    ],
    ids=["race", "flaky", "inconclusive", "clean-bounded", "clean-open", "non-idempotent"],
)
def test_the_timing_conclusion(
    rounds: list[Round],
    margin: Margin,
    fresh_only: bool,
    non_idempotent: dict[str, object],
    verdict: str,
    says: str,
    allowed: bool,
) -> None:
    evidence, arms = _timing(rounds, margin=margin, fresh_only=fresh_only)
    finding = conclude(evidence, arms, non_idempotent, budget_seconds=600.0)
    assert finding.verdict == verdict, finding.reason
    assert says in finding.reason
    assert _verdict(finding, arms).quarantine_allowed is allowed
    assert finding.statistics["looks_taken"] == len(rounds)
    assert set(finding.power["knobs"]) == set(KNOBS)
    assert (finding.knob == "switch-interval") is (verdict == RACE)


def test_a_race_found_alongside_a_leak_says_both() -> None:
    evidence, arms = _timing([_under("throttle", 20)] * 12)
    finding = conclude(evidence, arms, LEAKS, budget_seconds=600.0)
    assert finding.verdict == RACE and finding.knob == "throttle"
    assert "also non-idempotent (failed 8/8 in-process repeats" in finding.reason


# -- merging shards --------------------------------------------------------------------


def _shard(
    runner: str,
    verdict: str,
    baseline: tuple[int, int] = (0, 200),
    knobs: tuple[int, int] = (0, 200),
    *,
    bounded: bool = True,
    **fields: Any,
) -> Verdict:
    arms = [Arm("timing", "baseline", runs=baseline[1], failures=baseline[0])]
    arms += [Arm("timing", k, runs=knobs[1], failures=knobs[0]) for k in KNOBS]
    return Verdict(
        test_id=TEST_ID,
        verdict=verdict,
        reason=f"{verdict} on {runner}",
        rule=f"{verdict} rule",
        arms=arms,
        environment={"runner": runner},
        started_at="2026-01-01T00:00:00+00:00",
        finished_at="2026-01-01T00:10:00+00:00",
        power={"met": bounded},
        **fields,
    )


@pytest.mark.parametrize(
    ("shards", "verdict", "says", "knob"),
    [
        # What one runner proves is not undone by another's clean runs ...
        (
            [_shard("a", NOT_REPRODUCIBLE), _shard("b", DETERMINISTIC, (20, 20), (0, 0))],
            DETERMINISTIC,
            "on b: deterministic on b",
            None,
        ),
        # ... and a race outranks an order dependence found elsewhere.
        (
            [
                _shard("a", ORDER_DEPENDENT, polluter="tests/test_p.py::test_p"),
                _shard("b", RACE, knob="cpu-load"),
            ],
            RACE,
            "on b: race on b",
            "cpu-load@b",
        ),
        (
            [_shard("a", SEED_DEPENDENT, seed=3), _shard("b", NON_IDEMPOTENT)],
            SEED_DEPENDENT,
            "on a: seed-dependent on a",
            None,
        ),
        # A shard that could not run is no evidence; all of them: an error.
        ([_shard("a", ERROR), _shard("b", ERROR)], ERROR, "every shard failed", None),
        # One runner's baseline fails far more often than the other's: a race on it.
        (
            [_shard("a", FLAKY, (1, 200), (1, 200)), _shard("b", FLAKY, (10, 200), (10, 200))],
            RACE,
            "this runner fails more often",
            "runner:b",
        ),
        # The same rate on both runners: flaky, on the pooled counts.
        (
            [_shard("a", FLAKY, (2, 200), (2, 200)), _shard("b", FLAKY, (2, 200), (3, 200))],
            FLAKY,
            "failed 19 of 1600 runs over 2 runners at a flat rate",
            None,
        ),
        # An open question on one runner stays open.
        (
            [_shard("a", FLAKY, (2, 200), (2, 200)), _shard("b", INCONCLUSIVE, (2, 200))],
            INCONCLUSIVE,
            "on b: inconclusive on b",
            None,
        ),
        # Clean everywhere, and an error shard left out of the pool.
        (
            [_shard("a", NOT_REPRODUCIBLE), _shard("b", NOT_REPRODUCIBLE), _shard("c", ERROR)],
            NOT_REPRODUCIBLE,
            "no failure in 2400 runs over 2 runners",
            None,
        ),
    ],
    ids=[
        "break-decides",
        "race-outranks-order",
        "seed-outranks-leak",
        "all-errors",
        "runner-race",
        "flat",
        "open",
        "clean",
    ],
)
def test_the_shard_merge(
    shards: list[Verdict], verdict: str, says: str, knob: Optional[str]
) -> None:
    merged = merge_verdicts(shards, [f"dir-{i}" for i in range(len(shards))])
    assert merged.verdict == verdict, merged.reason
    assert says in merged.reason
    assert merged.knob == knob
    assert merged.shards == [s.environment["runner"] for s in shards]
    assert len(merged.notes) == len(shards)  # every shard's own verdict is kept as a note
    # The timing arms are pooled only when no shard's found cause decided the merge.
    decided = any(s.verdict in PRECEDENCE for s in shards)
    pooled = [a for a in merged.arms if a.shard == "pooled"]
    assert bool(pooled) is (not decided and verdict != ERROR)


@pytest.mark.parametrize(("bounded", "allowed"), [((True, True), True), ((True, False), False)])
def test_a_merged_clean_record_allows_quarantine_only_when_every_runner_bounded(
    bounded: tuple[bool, bool], allowed: bool
) -> None:
    shards = [_shard(r, NOT_REPRODUCIBLE, bounded=b) for r, b in zip("ab", bounded)]
    merged = merge_verdicts(shards, ["x", "y"])
    assert merged.verdict == NOT_REPRODUCIBLE
    assert merged.quarantine_allowed is allowed
    assert ("not every runner bounded every knob" in merged.reason) is not allowed


def test_a_merge_keeps_every_shards_arms_labelled() -> None:
    merged = merge_verdicts(
        [_shard("a", FLAKY, (1, 100)), _shard("a", FLAKY, (2, 100))], ["x", "y"]
    )
    # Two shards that name the same runner are told apart by number.
    assert merged.shards == ["a#1", "a#2"]
    baseline = [a for a in merged.arms if a.knob == "baseline"]
    assert [(a.shard, a.failures) for a in baseline] == [("a#1", 1), ("a#2", 2), ("pooled", 3)]


def _verdict(finding: Finding, arms: Optional[list[Arm]] = None) -> Verdict:
    """The verdict the engine would build from a finding: what quarantine reads."""
    return Verdict(
        test_id=TEST_ID,
        verdict=finding.verdict,
        reason=finding.reason,
        rule=finding.rule,
        arms=arms or [],
        power=dict(finding.power),
    )
