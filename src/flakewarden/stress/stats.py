"""Exact small-sample statistics with the standard library: no scipy in the tested environment.

- ``fisher_greater``: one-sided Fisher exact test that a stressed arm fails more
  often than the baseline arm (hypergeometric tail, summed in log space).
- ``holm``: Holm's step-down adjustment across the knobs tried together.
- ``clopper_pearson`` / ``upper_bound``: exact binomial bounds on a failure rate.

The timing phase's stopping rule, valid at any number of looks, is ``sequential``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

# The exact binomial bounds live in the vocabulary layer, shared with the flake history.
from flakewarden.model.binomial import (
    ALPHA,
    binomial_cdf,
    clopper_pearson,
    lower_bound,
    upper_bound,
)

__all__ = [
    "ALPHA",
    "binomial_cdf",
    "clopper_pearson",
    "fisher_greater",
    "holm",
    "lower_bound",
    "upper_bound",
]


def _log_comb(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


def fisher_greater(base_failures: int, base_runs: int, arm_failures: int, arm_runs: int) -> float:
    """P-value of H1 "the arm fails more often than the baseline" (one-sided Fisher exact).

    Conditioning on the total number of failures, the arm's failure count is
    hypergeometric under H0; the p-value is the probability of the arm getting
    at least as many failures as it did.
    """
    for value in (base_failures, base_runs, arm_failures, arm_runs):
        if value < 0:
            raise ValueError("counts must not be negative")
    if base_failures > base_runs or arm_failures > arm_runs:
        raise ValueError("failures cannot exceed runs")
    total = base_runs + arm_runs
    failures = base_failures + arm_failures
    if total == 0 or failures == 0:
        return 1.0
    low = max(arm_failures, failures - base_runs)
    high = min(arm_runs, failures)
    log_denominator = _log_comb(total, failures)
    terms = [
        _log_comb(arm_runs, k) + _log_comb(base_runs, failures - k) - log_denominator
        for k in range(low, high + 1)
    ]
    if not terms:
        return 0.0
    peak = max(terms)
    p = math.exp(peak) * math.fsum(math.exp(t - peak) for t in terms)
    return min(1.0, p)


def holm(pvalues: Mapping[str, float]) -> dict[str, float]:
    """Holm-adjusted p-values: compare each to alpha to control the family-wise error rate."""
    ordered = sorted(pvalues.items(), key=lambda item: item[1])
    m = len(ordered)
    adjusted: dict[str, float] = {}
    running = 0.0
    for rank, (name, p) in enumerate(ordered):
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[name] = running
    return adjusted
