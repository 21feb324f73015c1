"""Known values for the stress statistics, computed with exact combinatorics."""

from __future__ import annotations

from fractions import Fraction
from math import comb

import pytest

from flakewarden.stress import stats


def exact_fisher(base_failures: int, base_runs: int, arm_failures: int, arm_runs: int) -> float:
    failures = base_failures + arm_failures
    total = comb(base_runs + arm_runs, failures)
    tail = sum(
        Fraction(comb(arm_runs, k) * comb(base_runs, failures - k), total)
        for k in range(arm_failures, min(arm_runs, failures) + 1)
    )
    return float(tail)


def test_fisher_small_table_by_hand() -> None:
    # 8 runs, 4 failures; the arm holds 3 or 4 of them: (4*4 + 1) / C(8, 4) = 17/70.
    assert stats.fisher_greater(1, 4, 3, 4) == pytest.approx(17 / 70, rel=1e-12)


def test_fisher_all_failures_in_arm() -> None:
    # Every one of 16 failures in the knob arm: C(20, 16) / C(40, 16).
    expected = comb(20, 16) / comb(40, 16)
    assert stats.fisher_greater(0, 20, 16, 20) == pytest.approx(expected, rel=1e-9)
    assert expected < 1e-6


@pytest.mark.parametrize(
    "table",
    [(0, 400, 331, 400), (2, 400, 1, 400), (9, 40, 20, 20), (5, 30, 5, 30), (0, 10, 0, 10)],
)
def test_fisher_matches_exact_combinatorics(table: tuple[int, int, int, int]) -> None:
    assert stats.fisher_greater(*table) == pytest.approx(exact_fisher(*table), rel=1e-9, abs=1e-300)


def test_fisher_flat_rate_is_not_significant() -> None:
    # A fixed 1/200 failure that stays flat under a knob is nowhere near significant.
    # 3 failures in 800 runs: p is the chance the arm holds at least 1 of them.
    flat = 1 - comb(400, 3) / comb(800, 3)
    assert stats.fisher_greater(2, 400, 1, 400) == pytest.approx(flat, rel=1e-12)
    assert flat > 0.87
    assert stats.fisher_greater(0, 10, 0, 10) == 1.0


def test_fisher_rejects_impossible_counts() -> None:
    with pytest.raises(ValueError):
        stats.fisher_greater(3, 2, 0, 2)


def test_holm_by_hand() -> None:
    adjusted = stats.holm({"a": 0.01, "b": 0.04, "c": 0.03})
    assert adjusted["a"] == pytest.approx(0.03)
    assert adjusted["c"] == pytest.approx(0.06)
    assert adjusted["b"] == pytest.approx(0.06)  # monotone: never below an earlier step
    assert stats.holm({"x": 0.6, "y": 0.7}) == {"x": 1.0, "y": 1.0}


def test_clopper_pearson_zero_failures() -> None:
    assert stats.upper_bound(0, 200) == pytest.approx(1 - 0.05 ** (1 / 200), rel=1e-6)
    assert stats.upper_bound(0, 200) == pytest.approx(0.0148, abs=1e-4)
    assert stats.upper_bound(0, 598) < 0.005 < stats.upper_bound(0, 597)


def test_clopper_pearson_two_sided_known_values() -> None:
    # Textbook values for 5/20 (95 %): 0.0866 to 0.4910.
    low, high = stats.clopper_pearson(5, 20)
    assert low == pytest.approx(0.0866, abs=1e-4)
    assert high == pytest.approx(0.4910, abs=1e-4)
    assert stats.clopper_pearson(0, 10)[0] == 0.0
    assert stats.clopper_pearson(10, 10) == (pytest.approx(0.025 ** (1 / 10), rel=1e-6), 1.0)


def test_bounds_bracket_the_binomial_tail() -> None:
    high = stats.upper_bound(3, 50)
    assert stats.binomial_cdf(3, 50, high) == pytest.approx(0.05, rel=1e-6)
    low = stats.lower_bound(3, 50)
    assert 1 - stats.binomial_cdf(2, 50, low) == pytest.approx(0.05, rel=1e-6)
