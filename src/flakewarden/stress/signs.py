"""The race test's units: knob processes paired with baseline processes, their signs, and the
likelihood ratio of those signs mixed over a grid of chances (``sequential.Sequential``)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from flakewarden.stress.bounds import Counts

# The chances that a knob's process fails more of its runs than its paired baseline
# process does, that the race test's mixture is spread over (a fair coin when the
# knob changes nothing).
THETA_GRID = (0.55, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 0.999)

# The most processes a knob sweeping its pairs gets in one round (``Sequential._sweep``):
# a knob with no evidence yet needs 8 straight wins to cross the threshold of 4 knobs.
SWEEP_PAIRS = 8


def paired_signs(base: Sequence[Counts], knob: Sequence[Counts]) -> tuple[int, int]:
    """Pairs in which the knob's process failed a larger (smaller) share of its runs.

    The i-th knob process of a round is paired with the round's i-th baseline
    process, an order fixed before either ran. When the knob changes nothing,
    the two processes of a pair are alike whatever the runs inside a process
    share, so each untied pair is a fair coin: the sign test needs no
    independence between the runs of one process.
    """
    higher = lower = 0
    for b, k in zip(base, knob):
        if not b.runs or not k.runs:
            continue
        diff = k.failures * b.runs - b.failures * k.runs
        higher += diff > 0
        lower += diff < 0
    return higher, lower


def log_sum(values: Iterable[float]) -> float:
    items = list(values)
    if not items:
        return -math.inf
    peak = max(items)
    if peak == -math.inf:
        return peak
    return peak + math.log(math.fsum(math.exp(v - peak) for v in items))


def with_signs(logs: Sequence[float], higher: int, lower: int) -> list[float]:
    """Each chance's log likelihood ratio after ``higher`` pairs won and ``lower`` lost."""
    return [
        value + higher * math.log(2 * theta) + lower * math.log(2 * (1 - theta))
        for value, theta in zip(logs, THETA_GRID)
    ]


def mixture_log(logs: Sequence[float]) -> float:
    """The log of the mixture's value: the likelihood ratios averaged over the grid."""
    return log_sum(logs) - math.log(len(THETA_GRID))


def wins_to_cross(logs: Sequence[float], threshold: float) -> int:
    """Straight wins after which the mixture reaches ``threshold`` (at most ``SWEEP_PAIRS``)."""
    target = math.log(threshold)
    for pairs in range(1, SWEEP_PAIRS + 1):
        if mixture_log(with_signs(logs, pairs, 0)) >= target:
            return pairs
    return SWEEP_PAIRS
