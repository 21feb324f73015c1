"""Exact binomial bounds on a failure rate, with the standard library only.

Shared by the stress verdicts and the flake history's scores (which must not
import stress), so the pure math lives here in the vocabulary layer.
"""

from __future__ import annotations

import functools
import math

ALPHA = 0.05


def log_comb(n: int, k: int) -> float:
    """log(n choose k)."""
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


def binomial_cdf(k: int, n: int, p: float) -> float:
    """P(X <= k) for X ~ Binomial(n, p)."""
    return _cdf(k, n, p, _log_combs(k, n))


def _log_combs(k: int, n: int) -> list[float]:
    return [log_comb(n, i) for i in range(max(0, k + 1))] if k < n else []


def _cdf(k: int, n: int, p: float, combs: list[float]) -> float:
    """``binomial_cdf`` with log(n choose i) for i <= k already computed."""
    if k < 0:
        return 0.0
    if k >= n or p <= 0.0:
        return 1.0
    if p >= 1.0:
        return 0.0
    log_p, log_q = math.log(p), math.log1p(-p)
    terms = [c + i * log_p + (n - i) * log_q for i, c in enumerate(combs)]
    peak = max(terms)
    return min(1.0, math.exp(peak) * math.fsum(math.exp(t - peak) for t in terms))


@functools.lru_cache(maxsize=65536)
def _solve(target: float, k: int, n: int) -> float:
    """The p at which P(X <= k) equals ``target`` (the CDF falls as p grows).

    Cached: a stress run asks for the same bounds round after round.
    """
    combs = _log_combs(k, n)  # the same for every step of the bisection
    low, high = 0.0, 1.0
    for _ in range(100):
        mid = (low + high) / 2
        if mid in (low, high):  # adjacent floats: every further step gives this same value
            break
        if _cdf(k, n, mid, combs) > target:
            low = mid
        else:
            high = mid
    return (low + high) / 2


def upper_bound(failures: int, runs: int, confidence: float = 1 - ALPHA) -> float:
    """One-sided Clopper-Pearson upper bound on the failure rate.

    With no failures this is ``1 - (1 - confidence) ** (1 / runs)``: 200 clean
    runs bound the rate below 1.49 %, and 598 are needed to get below 0.5 %.
    """
    if runs <= 0:
        return 1.0
    if failures >= runs:
        return 1.0
    return _solve(1 - confidence, failures, runs)


def lower_bound(failures: int, runs: int, confidence: float = 1 - ALPHA) -> float:
    """One-sided Clopper-Pearson lower bound on the failure rate."""
    if runs <= 0 or failures <= 0:
        return 0.0
    # P(X >= failures) = confidence-complement at the bound, i.e. P(X <= failures-1) = confidence.
    return _solve(confidence, failures - 1, runs)


@functools.lru_cache(maxsize=65536)
def clopper_pearson(failures: int, runs: int, confidence: float = 1 - ALPHA) -> tuple[float, float]:
    """Two-sided exact interval for a failure rate (each tail gets half the error)."""
    tail = (1 - confidence) / 2
    return (
        lower_bound(failures, runs, 1 - tail),
        upper_bound(failures, runs, 1 - tail),
    )
