"""Sharing one burn-in budget among the selected tests, run one after another.

A pull request affords a fixed time, so the tests share it: by their durations on the
base branch when known (a test twice as slow needs twice the time for the same runs),
else equally. Every test gets at least a floor, about what the stress engine spends
before its timing phase (a probe, isolated runs, in-process repeats); tests that would
not get their floor are not run and say so. What a test leaves unspent (its verdict came
early) goes to the tests after it.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Optional

# What stress runs before its timing phase: a probe, 10 fresh processes of one run and
# 2 processes of 5 in-process repeats. An estimate of their cost, not the engine's rule.
START_PROCESSES = 13
START_RUNS = 20
MIN_FLOOR_SECONDS = 5.0
# One test's file starts faster than the whole suite collects: the measured collection
# time stands for a process's start only up to this.
MAX_START_SECONDS = 3.0
DEFAULT_BUDGET_SECONDS = 120.0


def floor_seconds(start_seconds: float, test_seconds: Optional[float]) -> float:
    """The least a test gets: stress's processes before timing, at ``start_seconds`` each."""
    starts = START_PROCESSES * min(max(start_seconds, 0.0), MAX_START_SECONDS)
    return max(MIN_FLOOR_SECONDS, starts + START_RUNS * max(test_seconds or 0.0, 0.0))


def weights(durations: Sequence[Optional[float]]) -> list[float]:
    """Each test's weight: its duration; an unknown one weighs the median of the known."""
    known = [d for d in durations if d is not None and d > 0]
    fill = statistics.median(known) if known else 1.0
    return [max(d, 1e-3) if d is not None and d > 0 else fill for d in durations]


def fitting(budget: float, floors: Sequence[float]) -> int:
    """How many tests, in order, the budget gives their floor (at least the first one)."""
    total = 0.0
    for count, floor in enumerate(floors):
        if count and total + floor > budget:
            return count
        total += floor
    return len(floors)


def share(remaining: float, weights: Sequence[float], floors: Sequence[float]) -> float:
    """The seconds of the first of the tests still to run, out of ``remaining``.

    Its weight's part of what is left, keeping the floors of the tests after it, and
    never below its own floor.
    """
    if not weights:
        return 0.0
    proportional = remaining * weights[0] / sum(weights)
    return max(floors[0], min(proportional, remaining - sum(floors[1:])))
