"""Failing runs against passing runs, line by line: each line's spectrum score.

Each run brings how often each line of the project's code ran (``inside/plugin/lines.py``).
Two events are scored with Ochiai's formula, ``ef / sqrt(F * (ef + ep))`` (F failing runs,
``ef`` and ``ep`` the failing and passing runs in which the event happened):

- *ran*: the line ran at all. It says something only for a line some passing run did not
  run (a branch only failing runs take); a line every run ran scores nothing.
- *ran more*: the line ran more often than in any passing run. A check-then-act race runs
  the same lines in both, but runs the act (and the value's build) twice when it loses.

A line's score is the larger of the two. Ochiai was chosen over DStar and Tarantula on the
localisation corpus (``benchmarks/bench_where.py``): it ranks a line every failing run
took and no passing run took at 1.0, whatever the share of failing runs, and is not
inflated by lines a few failing runs took by chance, which a flaky test's runs are full of.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import NamedTuple

Lines = Mapping[str, Mapping[int, int]]  # file -> line -> how often it ran in one run


class LineScore(NamedTuple):
    file: str
    line: int
    score: float
    failing: int  # failing runs
    passing: int  # passing runs
    ran_failing: int  # failing runs that ran the line
    ran_passing: int  # passing runs that ran it
    more: int  # failing runs that ran it more often than any passing run
    most_passing: int  # the most often a passing run ran it
    mean_failing: float  # how often a failing run ran it, on average

    @property
    def exclusive(self) -> bool:
        """Only failing runs ran it, or ran it this often: it marks the failing path."""
        return self.ran_passing == 0 or self.more == self.failing

    def says(self) -> str:
        """The evidence in words and numbers."""
        if self.ran_passing < self.passing or self.more == 0:
            return (
                f"ran in {self.ran_failing}/{self.failing} failing runs and "
                f"{self.ran_passing}/{self.passing} passing runs"
            )
        return (
            f"ran {self.mean_failing:.3g}x per failing run, more often than in any passing run "
            f"(at most {self.most_passing}x) in {self.more}/{self.failing} failing runs"
        )


def ochiai(ef: int, ep: int, failing: int) -> float:
    if not ef or not failing:
        return 0.0
    return ef / math.sqrt(failing * (ef + ep))


def score_lines(failing: Sequence[Lines], passing: Sequence[Lines]) -> list[LineScore]:
    """Every line a failing run ran, with its spectrum score, best first."""
    keys = {(file, line) for run in failing for file, lines in run.items() for line in lines}
    out = []
    for file, line in keys:
        in_failing = [run.get(file, {}).get(line, 0) for run in failing]
        in_passing = [run.get(file, {}).get(line, 0) for run in passing]
        ran_f = sum(1 for c in in_failing if c)
        ran_p = sum(1 for c in in_passing if c)
        most = max(in_passing, default=0)
        more = sum(1 for c in in_failing if c > most)
        ran = ochiai(ran_f, ran_p, len(failing)) if ran_p < len(passing) else 0.0
        more_score = ochiai(more, 0, len(failing)) if passing else 0.0
        out.append(
            LineScore(
                file,
                line,
                max(ran, more_score),
                len(failing),
                len(passing),
                ran_f,
                ran_p,
                more,
                most,
                sum(in_failing) / len(failing) if failing else 0.0,
            )
        )
    return sorted(out, key=lambda s: (-s.score, s.file, s.line))
