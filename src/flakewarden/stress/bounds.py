"""How much a knob could raise the failure rate: an upper bound valid at any number of looks.

An anytime-valid upper bound on an arm's failure rate: the smallest rate q
that a plug-in likelihood ratio test martingale rejects at level ``beta``
(predictable estimate from earlier rounds against q). A knob whose rate
exceeded the bound would have been seen with probability at least
``1 - beta``. The knob is *bounded* when the bound minus the baseline's rate
is within the margin (``Margin``), and only when that statement can bind: a bound of 100%,
or a baseline plus margin of 100% or more, rules nothing out. ``sequential`` weighs the
knobs with it.

When the runs of a process share their fate, the processes are the independent units,
each counted by the share of its runs that failed (a value in [0, 1] whose mean is the
rate per run): ``ShareBound`` bounds that mean, at any number of looks, adapting to how
much the shares vary.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from typing import NamedTuple, Optional

BETA = 0.10  # a knob above the bound would have been seen with probability 1 - BETA
MARGIN = 0.0025  # largest increase in failure rate a bounded knob may still hide (absolute)
RELATIVE_MARGIN = 0.5  # ... or this share of the baseline's own rate, when that is larger
# The plug-in estimate's pseudo-count of failures: small, so that a few clean rounds
# already bound a rate near zero (the first round is estimated at half the candidate).
PSEUDO_FAILURES = 0.1


class Margin(NamedTuple):
    """The largest increase in failure rate that still counts as "no knob effect"."""

    absolute: float = MARGIN
    relative: float = RELATIVE_MARGIN

    def at(self, baseline_rate: float) -> float:
        """The margin at a baseline rate: past a rate of 50%, at most half the way to 100%,
        so that a bound within it still rules a rate out."""
        relative = min(self.relative * baseline_rate, (1.0 - baseline_rate) / 2)
        return max(self.absolute, relative)

    def describe(self) -> str:
        return (
            f"{100 * self.absolute:.2f} percentage points, or {100 * self.relative:.0f}% of "
            "the baseline's rate when that is larger (at most half the way from the "
            "baseline's rate to 100%)"
        )


DEFAULT_MARGIN = Margin()


class Counts(NamedTuple):
    runs: int
    failures: int


def _log_bernoulli(failures: int, runs: int, p: float) -> float:
    if p <= 0.0:
        return 0.0 if failures == 0 else -math.inf
    if p >= 1.0:
        return 0.0 if failures == runs else -math.inf
    return failures * math.log(p) + (runs - failures) * math.log1p(-p)


class RateBound:
    """An upper bound on one arm's failure rate, valid however many rounds were looked at.

    For a candidate rate q, each round's likelihood under a predictable
    estimate (earlier rounds only, capped at q) against its likelihood under q
    multiplies into a test martingale for "the rate is at least q"; q is
    excluded once it reaches ``1 / beta``, and the bound is the smallest q
    excluded. A round whose estimate is at least q contributes nothing, so
    with the rounds sorted by their estimate the martingale at any q is one
    lookup in prefix sums.
    """

    def __init__(self, beta: float = BETA) -> None:
        self.beta = beta
        self.runs = 0
        self.failures = 0
        self.rounds: list[tuple[float, float, int, int]] = []  # (estimate, log-lik, runs, fails)
        self._prefix: Optional[tuple[list[float], list[float], list[int], list[int]]] = None
        self.first: Optional[Counts] = None  # estimated by half the candidate rate

    def add(self, counts: Counts) -> None:
        if self.first is None:
            self.first = counts
        else:
            estimate = (self.failures + PSEUDO_FAILURES) / (self.runs + 1)
            own = _log_bernoulli(counts.failures, counts.runs, estimate)
            bisect.insort(self.rounds, (estimate, own, counts.runs, counts.failures))
        self.runs += counts.runs
        self.failures += counts.failures
        self._prefix = None

    def _sums(self) -> tuple[list[float], list[float], list[int], list[int]]:
        if self._prefix is None:
            keys, own, runs, fails = [], [0.0], [0], [0]
            for estimate, log_lik, n, f in self.rounds:
                keys.append(estimate)
                own.append(own[-1] + log_lik)
                runs.append(runs[-1] + n)
                fails.append(fails[-1] + f)
            self._prefix = (keys, own, runs, fails)
        return self._prefix

    def log_martingale(self, q: float) -> float:
        keys, own, runs, fails = self._sums()
        i = bisect.bisect_left(keys, q)  # rounds whose estimate is below q
        total = own[i] - _log_bernoulli(fails[i], runs[i], q)
        if self.first is not None:
            first = self.first
            total += _log_bernoulli(first.failures, first.runs, q / 2) - _log_bernoulli(
                first.failures, first.runs, q
            )
        return total

    def upper(self) -> float:
        if self.runs == 0:
            return 1.0
        threshold = math.log(1 / self.beta)
        if self.log_martingale(1.0 - 1e-12) < threshold:
            return 1.0
        low = self.failures / self.runs
        # The martingale need not grow with q everywhere: a candidate above the first
        # crossing may still be unexcluded. The bound is above every unexcluded point
        # of a fine grid, then found by bisection from the highest such point.
        grid = [low + (1.0 - low) * i / 100 for i in range(1, 100)]
        unexcluded = [q for q in grid if self.log_martingale(q) < threshold]
        if unexcluded:
            low = max(low, unexcluded[-1])
        high = 1.0
        for _ in range(50):
            mid = (low + high) / 2
            if self.log_martingale(mid) >= threshold:
                high = mid
            else:
                low = mid
        return high


def anytime_upper_bound(rounds: Sequence[Counts], beta: float = BETA) -> float:
    """``RateBound``'s upper bound over these rounds, in the order they ran."""
    bound = RateBound(beta)
    for counts in rounds:
        bound.add(counts)
    return bound.upper()


class ShareBound:
    """Anytime-valid bounds on the mean of independent shares in [0, 1], from their variance.

    The predictable plug-in empirical-Bernstein confidence sequence (Waudby-Smith and
    Ramdas, 2023): for the true mean m, the product over units of
    exp(l_i (x_i - m) - v_i psi(l_i)) is a test supermartingale, with v_i the squared
    distance of x_i from the mean of the earlier units (times 4), psi(l) = (-log(1 - l) -
    l) / 4 and each l_i in [0, 1) chosen from the earlier units only; by Ville's inequality
    it ever reaches 1 / alpha with probability at most alpha. Solved for m it gives the
    bounds below, valid together at any number of looks; units whose shares vary little
    (many independent runs a process) give nearly the bound of counting their runs.
    """

    CAP = 0.75  # the largest bet l_i: bounded away from 1, where psi grows without bound

    def __init__(self, alpha: float) -> None:
        self.alpha = alpha
        self.units = 0
        self._sum = 0.0
        self._squares = 0.0
        self._mean = 0.5  # the running estimates, from a pseudo-unit at 1/2
        self._variance = 0.25
        self._bets = 0.0
        self._weighted = 0.0
        self._penalty = 0.0

    def add(self, share: float) -> None:
        """One unit's share of failing runs, in the order the units were fixed."""
        t = self.units + 1
        log_alpha = math.log(1 / self.alpha)
        bet = min(self.CAP, math.sqrt(2 * log_alpha / (self._variance * t * math.log(1 + t))))
        self._bets += bet
        self._weighted += bet * share
        self._penalty += (share - self._mean) ** 2 * (-math.log1p(-bet) - bet)  # v_i psi(l_i)
        self.units = t
        self._sum += share
        self._mean = (0.5 + self._sum) / (t + 1)
        self._squares += (share - self._mean) ** 2
        self._variance = (0.25 + self._squares) / (t + 1)

    def _width(self) -> float:
        return (math.log(1 / self.alpha) + self._penalty) / self._bets

    def upper(self) -> float:
        if not self.units:
            return 1.0
        return min(1.0, self._weighted / self._bets + self._width())

    def lower(self) -> float:
        if not self.units:
            return 0.0
        return max(0.0, self._weighted / self._bets - self._width())


class KnobBound(NamedTuple):
    """What one knob's runs exclude: its rate is below ``upper`` (``1 - beta``)."""

    upper: float
    baseline_rate: float  # what the baseline's rate is at least (95% one-sided)
    increase: float  # upper - baseline_rate, at least 0
    margin: float
    runs: int
    # "processes" when the failures cluster by process: the bound is still on the per-run
    # rate, with each process one unit weighted by the share of its runs that failed
    unit: str = "runs"
    # runs over every level of a load knob that escalated (its bound counts the last level's)
    overall: int = 0

    @property
    def binds(self) -> bool:
        """The statement rules a rate out: the bound is below 100%, and so is the
        baseline plus the margin (at or past it, no knob could be caught exceeding it)."""
        return self.upper < 1.0 and self.baseline_rate + self.margin < 1.0

    @property
    def met(self) -> bool:
        return self.binds and self.increase <= self.margin

    def describe(self, beta: float = BETA) -> str:
        level = (
            f" at its last level ({self.overall:,} runs over all its levels)"
            if self.overall > self.runs and self.unit == "runs"
            else ""
        )
        units = (
            f"{self.runs:,} runs{level}"
            if self.unit == "runs"
            else f"{self.runs:,} processes (their failures cluster by process, so each "
            "process counts once, by the share of its runs that failed)"
        )
        if self.upper >= 1.0:
            return (
                f"its {units} rule out no rate: a knob raising the rate to 100% could "
                "have gone unseen"
            )
        statement = (
            f"a knob raising the rate per run above {100 * self.upper:.2f}% (baseline at "
            f"least {100 * self.baseline_rate:.2f}% + {100 * self.increase:.2f} points) "
            f"would have been seen with {100 * (1 - beta):.0f}% probability in its {units}"
        )
        if self.baseline_rate + self.margin >= 1.0:
            statement += (
                f"; the margin ({100 * self.margin:.2f} points over that baseline) reaches "
                "100%, so no bound rules out an effect within it"
            )
        return statement
