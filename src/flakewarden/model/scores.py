"""A test's score over a window of its history: the figures every decision reads.

``history show`` prints these, ``quarantine``/``reevaluate`` decide from them and
the digest ranks by them, so they are vocabulary (no store, no GitHub here).
A failure rate is first-attempt failures over runs: a rerun that passed hides a
flake from the build, not from the rate.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

from flakewarden.model.binomial import clopper_pearson

HEALTHY = "healthy"
FLAKY = "flaky"
BROKEN = "broken"
NEW = "new"
#: Most urgent first: the order ``history show`` lists tests in.
STATES = (BROKEN, FLAKY, NEW, HEALTHY)


@dataclasses.dataclass(frozen=True)
class Figures:
    """Counts over a set of runs; ``rate`` and ``interval`` derive from them."""

    runs: int = 0
    first_attempt_failures: int = 0
    flaky_runs: int = 0  # the first attempt failed and a rerun passed
    hard_failures: int = 0  # every attempt failed

    @property
    def rate(self) -> float:
        return self.first_attempt_failures / self.runs if self.runs else 0.0

    @property
    def interval(self) -> tuple[float, float]:
        """The exact (Clopper-Pearson) 95% interval of the rate; (0, 1) without runs."""
        return clopper_pearson(self.first_attempt_failures, self.runs)

    def to_json(self) -> dict[str, Any]:
        low, high = self.interval
        return {
            "runs": self.runs,
            "first_attempt_failures": self.first_attempt_failures,
            "flaky_runs": self.flaky_runs,
            "hard_failures": self.hard_failures,
            "rate": round(self.rate, 6),
            "interval": [round(low, 6), round(high, 6)],
        }


#: Where the default branch came from, as ``history show`` says it.
BRANCH_SOURCES = {
    "option": "given by --branch",
    "config": "history.default_branch in the config file",
    "repository": "the repository's default branch",
    "fallback": "the fallback: no --branch, config or repository default known",
}


@dataclasses.dataclass(frozen=True)
class WindowInfo:
    """Which runs a score was computed over, said in words and in figures."""

    branch: str
    branch_source: str  # a key of BRANCH_SOURCES
    runs: int  # default-branch runs scored
    excluded: int  # default-branch runs left out: the suite fell over
    pull_request_runs: int  # scored apart, never mixed into the rate
    limit_runs: Optional[int]
    limit_days: Optional[float]
    oldest: str = ""  # started_at of the oldest run scored
    newest: str = ""

    def describe(self) -> str:
        limits = []
        if self.limit_runs is not None:
            limits.append(f"last {self.limit_runs} runs")
        if self.limit_days is not None:
            limits.append(f"last {self.limit_days:g} days")
        span = " within the ".join(limits) or "every run"
        source = BRANCH_SOURCES.get(self.branch_source, self.branch_source)
        branch = self.branch or "no branch (runs outside GitHub Actions and any git branch)"
        text = f"{span} on {branch} ({source}): {self.runs} runs scored"
        if self.excluded:
            text += f", {self.excluded} excluded (the suite fell over)"
        return text + f"; {self.pull_request_runs} pull-request runs scored apart"

    def to_json(self) -> dict[str, Any]:
        return {
            "branch": self.branch,
            "branch_source": self.branch_source,
            "runs": self.runs,
            "excluded_runs": self.excluded,
            "pull_request_runs": self.pull_request_runs,
            "limit_runs": self.limit_runs,
            "limit_days": self.limit_days,
            "oldest": self.oldest,
            "newest": self.newest,
            "description": self.describe(),
        }


@dataclasses.dataclass(frozen=True)
class TestScore:
    """One test over one window of default-branch runs, pull-request runs kept apart."""

    __test__ = False  # not a pytest test class, whatever the name says

    test_id: str
    window: str  # WindowInfo.describe() of the window scored
    figures: Figures
    first_seen: str  # started_at of the oldest scored run the test ran in
    last_seen: str
    first_failure: str  # started_at of the oldest first-attempt failure in the window, or ""
    state: str
    pull_requests: Figures = Figures()
    previous: Optional[Figures] = None  # the window of the same size before, when scored
    # Runs of the window every failure of which was a cause of the environment's: counted
    # apart, in none of ``figures``.
    environment_runs: int = 0

    @property
    def rose(self) -> bool:
        """Its rate is above the previous window's, each over at least one run."""
        prev = self.previous
        return bool(prev and prev.runs and self.runs and self.rate > prev.rate)

    @property
    def runs(self) -> int:
        return self.figures.runs

    @property
    def first_attempt_failures(self) -> int:
        return self.figures.first_attempt_failures

    @property
    def flaky_runs(self) -> int:
        return self.figures.flaky_runs

    @property
    def hard_failures(self) -> int:
        return self.figures.hard_failures

    @property
    def rate(self) -> float:
        return self.figures.rate

    @property
    def interval(self) -> tuple[float, float]:
        return self.figures.interval

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.test_id,
            "state": self.state,
            **self.figures.to_json(),
            "first_seen": self.first_seen,
            "last_seen": self.last_seen,
            "first_failure": self.first_failure or None,
            "pull_requests": self.pull_requests.to_json(),
            "previous": self.previous.to_json() if self.previous is not None else None,
            "environment_runs": self.environment_runs,
        }
