"""The timing phase's sequential rule: race evidence valid at any look, and bounds that hold.

Everything here is exact arithmetic or seeded simulation (``random.Random``
with a fixed seed), so every figure asserted is reproducible.
"""

from __future__ import annotations

import math
import random

import pytest

from flakewarden.model.binomial import upper_bound
from flakewarden.stress.bounds import KnobBound, ShareBound
from flakewarden.stress.sequential import (
    BOUNDED,
    OPEN,
    RACE,
    THETA_GRID,
    Counts,
    Margin,
    RateBound,
    Sequential,
    anytime_upper_bound,
    paired_signs,
)

KNOBS = ("switch-interval", "cpu-load", "throttle")


def test_each_knob_process_is_paired_with_a_baseline_process_of_its_round() -> None:
    base = [Counts(20, 1), Counts(20, 0), Counts(20, 3), Counts(10, 1)]
    knob = [Counts(20, 4), Counts(20, 0), Counts(20, 1), Counts(20, 2)]
    # 4/20 > 1/20, a tie, 1/20 < 3/20, and 2/20 = 1/10 by share: one each way.
    assert paired_signs(base, knob) == (1, 1)
    # A knob process without a baseline process to pair with weighs nothing.
    assert paired_signs(base[:1], knob) == (1, 0)


def test_a_sign_in_the_knobs_favour_weighs_two_theta() -> None:
    sequential = Sequential(KNOBS)
    sequential.add_round({"baseline": [Counts(20, 0)], "cpu-load": [Counts(20, 5)]})
    # One pair in the knob's favour: the mixture of 2 * theta over the grid.
    expected = sum(2 * t for t in THETA_GRID) / len(THETA_GRID)
    assert sequential.e_value("cpu-load") == pytest.approx(expected, rel=1e-12)
    assert sequential.e_value("throttle") == pytest.approx(1.0)


def test_a_round_crosses_once_its_pairs_so_far_would_make_a_race_and_adds_nothing() -> None:
    """What ends a round early: exactly what adding its processes so far would decide."""
    sequential = Sequential(KNOBS)
    for _ in range(7):
        sequential.add_round({"baseline": [Counts(20, 0)], "switch-interval": [Counts(20, 9)]})
    assert not sequential.races()
    before = sequential.e_value("switch-interval")
    # The throttle's step has not run: its arm is absent, as in a round cut short.
    cut = {"baseline": [Counts(20, 0)], "switch-interval": [Counts(20, 9)]}
    assert sequential.crossing(cut) == "switch-interval"
    assert sequential.e_value("switch-interval") == before  # nothing was added
    assert sequential.crossing({"baseline": [Counts(20, 0)], "cpu-load": [Counts(20, 3)]}) == ""
    assert sequential.crossing({"switch-interval": [Counts(20, 9)]}) == ""  # no pair yet
    sequential.add_round(cut)
    assert sequential.races() == ["switch-interval"]


def _trial(rng: random.Random, base: float, knob: dict[str, float], rounds: int) -> Sequential:
    sequential = Sequential(KNOBS)
    for _ in range(rounds):
        shares = sequential.allocation()
        sequential.add_round(
            {
                arm: [
                    Counts(20, sum(rng.random() < knob.get(arm, base) for _ in range(20)))
                    for _ in range(share)
                ]
                for arm, share in shares.items()
            }
        )
        if sequential.races():
            break
    return sequential


def test_a_flat_rate_is_called_a_race_in_at_most_alpha_of_trials_at_any_look() -> None:
    rng = random.Random(11)
    trials = 300
    races = sum(bool(_trial(rng, 0.10, {}, 40).races()) for _ in range(trials))
    # Ville's inequality with Bonferroni over 3 knobs: at most 5% whatever the looks.
    assert races / trials <= 0.05, races


def test_a_knob_only_race_crosses_the_threshold() -> None:
    rng = random.Random(5)
    found = [_trial(rng, 0.0, {"switch-interval": 0.05}, 60) for _ in range(20)]
    assert all(s.races() == ["switch-interval"] for s in found)
    assert all(s.state("switch-interval") == RACE for s in found)


def test_the_anytime_bound_is_close_to_the_fixed_sample_bound_and_never_below_it() -> None:
    for rounds, failures in ((50, 0), (100, 0), (100, 1)):
        counts = [Counts(20, failures)] * rounds
        n, f = 20 * rounds, failures * rounds
        fixed = upper_bound(f, n, 0.90)
        anytime = anytime_upper_bound(counts)
        assert fixed <= anytime <= 1.3 * fixed, (rounds, failures, fixed, anytime)


def test_the_anytime_bound_covers_the_true_rate_at_every_look() -> None:
    """Seeded: the share of trials whose bound ever fell below the true rate is at most beta."""
    rng = random.Random(3)
    rate, trials, missed = 0.02, 300, 0
    for _ in range(trials):
        bound = RateBound()
        for _ in range(30):
            bound.add(Counts(20, sum(rng.random() < rate for _ in range(20))))
            if bound.upper() < rate:
                missed += 1
                break
    assert missed / trials <= 0.10, missed


def test_a_clean_knob_is_bounded_then_gets_no_more_runs() -> None:
    sequential = Sequential(KNOBS)
    for _ in range(40):
        sequential.add_round({k: [Counts(20, 0)] * 2 for k in ("baseline", *KNOBS)})
    # 1,600 clean runs bound each knob's rate below 0.25% (ln 10 / 1600 = 0.14%).
    assert all(sequential.state(k) == BOUNDED for k in KNOBS)
    assert sequential.settled()
    assert sequential.allocation() == {
        "switch-interval": 0,
        "cpu-load": 0,
        "throttle": 0,
        "baseline": 1,
    }
    assert all(sequential.bound(k).upper < 0.0025 for k in KNOBS)


def test_an_open_knob_says_how_many_runs_would_settle_it() -> None:
    sequential = Sequential(KNOBS)
    for _ in range(5):
        sequential.add_round({k: [Counts(20, 0)] for k in ("baseline", *KNOBS)})
    assert sequential.state("cpu-load") == OPEN
    more = sequential.runs_to_settle("cpu-load")
    # 100 clean runs so far; about ln(10) / 0.25% = 921 are needed at the margin.
    assert 700 <= more <= 1500, more


def test_a_leaning_knob_gets_twice_the_runs_of_an_open_one() -> None:
    # Four pairs won and one lost: it leans (evidence above 1), sweeps nothing.
    sequential = Sequential(KNOBS)
    for knob_failures, base_failures in [(3, 0), (2, 0), (4, 1), (0, 2), (3, 0)]:
        sequential.add_round(
            {
                "baseline": [Counts(20, base_failures)],
                "switch-interval": [Counts(20, knob_failures)],
                "cpu-load": [Counts(20, 0)],
                "throttle": [Counts(20, 0)],
            }
        )
    assert sequential.signs["switch-interval"] == (4, 1)
    assert sequential.leans("switch-interval")
    assert sequential.allocation() == {
        "switch-interval": 2,
        "cpu-load": 1,
        "throttle": 1,
        "baseline": 2,
    }


def test_a_knob_that_won_every_pair_gets_the_pairs_that_would_make_it_a_race() -> None:
    """One pair won: 7 more straight wins reach the threshold (80 for 4 knobs), so the next
    round gives it (and the baseline) 7 processes; winning them all decides it there."""
    sequential = Sequential((*KNOBS, "yield"))
    sequential.add_round({"baseline": [Counts(20, 0)], "switch-interval": [Counts(20, 3)]})
    assert sequential.allocation() == {
        "switch-interval": 7,
        "cpu-load": 1,
        "throttle": 1,
        "yield": 1,
        "baseline": 7,
    }
    sequential.add_round({"baseline": [Counts(20, 0)] * 7, "switch-interval": [Counts(20, 3)] * 7})
    assert sequential.races() == ["switch-interval"]
    # A share that stands for 20 processes (a test run in fresh processes only) is not
    # multiplied by the pairs needed: 7 pairs are one share of 20.
    wide = Sequential((*KNOBS, "yield"))
    wide.add_round({"baseline": [Counts(1, 0)], "switch-interval": [Counts(1, 1)]})
    assert wide.allocation(unit=20)["switch-interval"] == 2  # a leaning knob's usual 2
    # One straight win fewer would not have been enough: 7 is the fewest that decide.
    short = Sequential((*KNOBS, "yield"))
    short.add_round({"baseline": [Counts(20, 0)] * 7, "switch-interval": [Counts(20, 3)] * 7})
    assert not short.races()


def test_the_margin_grows_with_the_baseline_rate() -> None:
    margin = Margin(0.0025, 0.5)
    assert margin.at(0.0) == 0.0025
    assert margin.at(0.20) == pytest.approx(0.10)


def test_past_half_the_margin_stops_half_the_way_to_certain_failure() -> None:
    margin = Margin(0.0025, 0.5)
    assert margin.at(0.5) == pytest.approx(0.25)
    assert margin.at(0.68) == pytest.approx(0.16)
    assert 0.68 + margin.at(0.68) < 1.0
    assert margin.at(0.999) == 0.0025  # nothing binds this close to 100%


def test_a_bound_of_100_percent_or_a_margin_reaching_it_bounds_nothing() -> None:
    # The statement once accepted: 7 processes, every one failing, a baseline whose
    # share was at least 68.37% and a margin of half of it.
    no_limit = KnobBound(1.0, 0.6837, 0.3163, 0.3418, 7, "processes")
    assert not no_limit.binds and not no_limit.met
    assert "rule out no rate" in no_limit.describe()
    past_certain = KnobBound(0.95, 0.70, 0.25, 0.35, 7000)
    assert past_certain.increase <= past_certain.margin
    assert not past_certain.binds and not past_certain.met
    assert "reaches 100%" in past_certain.describe()
    binding = KnobBound(0.80, 0.68, 0.12, 0.16, 7000)
    assert binding.binds and binding.met
    assert "above 80.00%" in binding.describe()


def _clustered_process(rng: random.Random, rate: float, runs: int) -> Counts:
    """A process whose runs share their fate: it draws its own rate, mean ``rate``."""
    own = rng.betavariate(rate * 2, (1 - rate) * 2)
    return Counts(runs, sum(rng.random() < own for _ in range(runs)))


def test_a_clustered_bound_is_on_the_per_run_rate_and_covers_it_at_every_look() -> None:
    """Seeded: processes as units, each by its share of failing runs; the upper bound
    misses the true per-run rate in at most beta of trials, the lower bound in at most 5%,
    at any look, though the runs of a process share their fate."""
    rng = random.Random(5)
    rate, trials, over, under = 0.13, 200, 0, 0
    for _ in range(trials):
        upper, lower = ShareBound(0.10), ShareBound(0.05)
        missed_upper = missed_lower = False
        for _ in range(60):
            for process in [_clustered_process(rng, rate, 50) for _ in range(3)]:
                upper.add(process.failures / process.runs)
                lower.add(process.failures / process.runs)
            missed_upper |= upper.upper() < rate
            missed_lower |= lower.lower() > rate
        over += missed_upper
        under += missed_lower
    assert over / trials <= 0.10, over
    assert under / trials <= 0.05, under
    # ... and, unlike the share of failing processes (near 100% here), they rule rates out.
    assert 0.0 < lower.lower() < rate < upper.upper() < 0.3


def test_shares_that_vary_little_close_in_on_the_rate_as_processes_grow() -> None:
    # Processes of 100 independent runs at 5%: their shares vary by runs alone. A single
    # process failing every run stays possible, so the bound pays about ln(10) / (0.75 n)
    # over the rate; it falls with the processes and stays above the bound on runs.
    rng = random.Random(21)
    bound, runs = ShareBound(0.10), RateBound()
    uppers = []
    for _ in range(4):
        for _ in range(200):
            processes = [Counts(100, sum(rng.random() < 0.05 for _ in range(100)))]
            bound.add(processes[0].failures / 100)
            runs.add(processes[0])
        uppers.append(bound.upper())
    assert uppers == sorted(uppers, reverse=True)
    assert 0.05 < runs.upper() < bound.upper() < 0.05 + 0.01
    assert ShareBound(0.10).upper() == 1.0 and ShareBound(0.05).lower() == 0.0


def test_clustered_failures_are_bounded_per_run_not_by_failing_processes() -> None:
    # 13% of runs fail, 100 runs a process, the failures bunched: nearly every process
    # fails somewhere, so a share of failing processes could bound nothing.
    rng = random.Random(13)
    sequential = Sequential(KNOBS)
    for _ in range(30):
        sequential.add_round(
            {
                arm: [_clustered_process(rng, 0.13, 100) for _ in range(2)]
                for arm in ("baseline", *KNOBS)
            }
        )
    bound = sequential.bound("cpu-load")
    assert bound.unit == "processes"
    assert bound.baseline_rate < 0.13 < bound.upper < 0.5
    assert "rate per run above" in bound.describe()
    assert bound.met == (bound.binds and bound.increase <= bound.margin)


def test_a_knob_that_drew_more_failures_by_chance_still_gets_a_budget() -> None:
    # The coin test's shape: the knob's processes drew 2 failures in 10 runs, the
    # baseline's 1, and the paired sign test sees no lean. Were the knob to do nothing,
    # both arms run at the pooled rate (15%): the knob's upper bound and the baseline's
    # lower bound both close on it, so enough runs bound the knob within the 50% relative
    # margin. Measured against the baseline's 10% alone, no number of runs would.
    sequential = Sequential(KNOBS)
    sequential.add_round(
        {
            "baseline": [Counts(5, 0), Counts(5, 1)],
            "switch-interval": [Counts(5, 2), Counts(5, 0)],
            "cpu-load": [Counts(5, 0)] * 2,
            "throttle": [Counts(5, 0)] * 2,
        }
    )
    knob = "switch-interval"
    assert sequential.state(knob) == OPEN and not sequential.leans(knob)
    more = sequential.runs_to_settle(knob)
    # At 15%, the bounds meet the margin between 1,280 and 2,560 runs of each arm.
    assert more is not None and 1270 <= more <= 2550, more


def test_a_knob_the_rounds_never_reached_is_projected_at_the_baselines_rate() -> None:
    # The --runs cap (or the budget) ended the rounds after the baseline and one knob ran:
    # the two load knobs have no run yet. What would settle them is still a number of runs,
    # never "the rates seen would not bound it": no rate of theirs was seen.
    sequential = Sequential(KNOBS)
    sequential.add_round(
        {"baseline": [Counts(10, 2)], "switch-interval": [Counts(10, 2)], "cpu-load": []}
    )
    assert sequential.totals["cpu-load"].runs == 0
    unreached = sequential.runs_to_settle("cpu-load")
    reached = sequential.runs_to_settle("switch-interval")
    assert unreached is not None and reached is not None
    # At the same 20% rate the unreached knob needs at least as many runs (its bound is
    # widened the most) and is counted from none.
    assert unreached >= reached > 0, (unreached, reached)


def test_a_knob_halfway_to_a_race_gets_four_times_the_runs() -> None:
    # Four pairs in the knob's favour: its evidence is past the square root of the
    # threshold, so the next round gives it (and the baseline) four processes.
    sequential = Sequential(KNOBS)
    for _ in range(4):
        sequential.add_round(
            {
                "baseline": [Counts(20, 0)],
                "switch-interval": [Counts(20, 20)],
                "cpu-load": [Counts(20, 0)],
                "throttle": [Counts(20, 0)],
            }
        )
    assert math.sqrt(sequential.threshold) <= sequential.e_value("switch-interval")
    assert sequential.e_value("switch-interval") < sequential.threshold
    assert sequential.allocation() == {
        "switch-interval": 4,
        "cpu-load": 1,
        "throttle": 1,
        "baseline": 4,
    }
