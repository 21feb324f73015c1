"""One burned-in test's result: the stress verdict, read as "may this new test merge?".

A test with no failing run whose every stress knob the engine bounded is ``stable``, and
its clean runs bound its failure rate; any failing run makes it a new flaky (or broken)
test under the engine's verdict. The bound is what sets burn-in apart from retries: ten
clean retries bound a rate only below 26%.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from flakewarden.changes import Selected
from flakewarden.model.binomial import upper_bound
from flakewarden.model.verdicts import (
    DETERMINISTIC,
    ERROR,
    FLAKY,
    INCONCLUSIVE,
    NON_IDEMPOTENT,
    NOT_REPRODUCIBLE,
    ORDER_DEPENDENT,
    RACE,
    SEED_DEPENDENT,
)
from flakewarden.stress.verdict import Verdict

from .stress_one import budget_to_bound, reproduce

STABLE = "stable"
PLAIN_RETRIES = 10
CONFIDENCE = 0.95


def percent(rate: float) -> str:
    """A rate as a short percentage: ``25.9%``, ``0.732%``."""
    return f"{100 * rate:.3g}%"


def rate_bound(runs: int) -> float:
    """The one-sided 95% upper bound on the failure rate after ``runs`` clean runs."""
    return upper_bound(0, runs, CONFIDENCE)


@dataclass(frozen=True)
class TestOutcome:
    """What burn-in concluded about one selected test, with where its evidence is."""

    node_id: str
    reasons: tuple[str, ...]
    verdict: str  # ``stable``, or the engine's verdict
    engine_verdict: str
    runs: int
    failures: int
    budget_seconds: float
    duration: float
    reproduce: str
    directory: str  # the stress verdict's folder, relative to the report directory
    reason: str  # the engine's reason
    file: Optional[str] = None  # relative to pytest's rootdir
    line: Optional[int] = None  # counted from 1
    knob: Optional[str] = None
    polluter: Optional[str] = None
    state_setter: Optional[tuple[str, ...]] = None
    seed: Optional[int] = None
    budget_to_bound: Optional[float] = None  # a clean test whose knobs were left open

    __test__ = False  # not a pytest test class, whatever its name

    @property
    def failing(self) -> bool:
        """A run failed: a new flaky test, or a broken one (``deterministic``)."""
        return self.failures > 0 and self.engine_verdict != ERROR

    @property
    def bound(self) -> Optional[float]:
        """With no failure: the rate its runs rule out, with 95% confidence."""
        return rate_bound(self.runs) if self.failures == 0 and self.runs else None

    def summary(self) -> str:
        """One line: the verdict and what it rests on."""
        if self.bound is not None and self.verdict in (STABLE, NOT_REPRODUCIBLE):
            text = (
                f"0 failures in {self.runs} runs: its rate is below {percent(self.bound)} "
                f"with {CONFIDENCE:.0%} confidence ({PLAIN_RETRIES} plain retries would bound "
                f"it only below {percent(rate_bound(PLAIN_RETRIES))})"
            )
            if self.verdict == STABLE:
                return text
            if self.budget_to_bound is not None:
                return (
                    f"{text}; not every stress knob was bounded: a budget of about "
                    f"{self.budget_to_bound:.0f} s for this test would bound them"
                )
            return f"{text}; not every stress knob was bounded by the runs its budget allowed"
        return self._failing_summary()

    def _failing_summary(self) -> str:
        counts = f"failed {self.failures} of {self.runs} runs"
        verdict = self.engine_verdict
        if verdict == RACE:
            return f"a race under {self.knob or 'a stress knob'}: {counts}"
        if verdict == ORDER_DEPENDENT:
            if self.polluter:
                return f"fails after {self.polluter} runs first: {counts}"
            if self.state_setter:
                return f"fails unless {' + '.join(self.state_setter)} runs first: {counts}"
            return f"depends on the order tests run in: {counts}"
        if verdict == SEED_DEPENDENT:
            seed = f" --randomly-seed={self.seed}" if self.seed is not None else " some seeds"
            return f"fails with{seed}: {counts}"
        if verdict == NON_IDEMPOTENT:
            return f"fails when repeated in one process (it leaks state into itself): {counts}"
        if verdict == DETERMINISTIC:
            return f"fails every run: a broken test, not a flake ({counts})"
        if verdict == FLAKY:
            return f"{counts} at a rate no stress knob changes"
        if verdict == INCONCLUSIVE:
            return (
                f"{counts}, and its budget ended before a cause was found or ruled out: not a pass"
            )
        if verdict == ERROR:
            return f"could not be stressed: {self.reason}"
        return f"{verdict}: {counts}"

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.node_id,
            "reasons": list(self.reasons),
            "verdict": self.verdict,
            "stress_verdict": self.engine_verdict,
            "failing": self.failing,
            "runs": self.runs,
            "failures": self.failures,
            "bound": None if self.bound is None else round(self.bound, 6),
            "bound_confidence": CONFIDENCE,
            "budget_seconds": round(self.budget_seconds, 1),
            "budget_to_bound": self.budget_to_bound,
            "duration": round(self.duration, 3),
            "reproduce": self.reproduce,
            "verdict_dir": self.directory,
            "summary": self.summary(),
            "reason": self.reason,
            "knob": self.knob,
            "polluter": self.polluter,
            "state_setter": None if self.state_setter is None else list(self.state_setter),
            "seed": self.seed,
            "file": self.file,
            "line": self.line,
        }


def outcome_of(
    selected: Selected,
    verdict: Verdict,
    *,
    budget: float,
    directory: str,
    file: Optional[str],
    line: Optional[int],
) -> TestOutcome:
    """Burn-in's reading of the engine's ``verdict`` for the ``selected`` test."""
    runs, failures = verdict.total_runs, verdict.total_failures
    clean_and_bounded = verdict.verdict == NOT_REPRODUCIBLE and not failures and verdict.bounded
    return TestOutcome(
        node_id=selected.node_id,
        reasons=selected.reasons,
        verdict=STABLE if clean_and_bounded else verdict.verdict,
        engine_verdict=verdict.verdict,
        runs=runs,
        failures=failures,
        budget_seconds=budget,
        duration=verdict.duration,
        reproduce=reproduce(verdict),
        directory=directory,
        reason=verdict.reason,
        file=file,
        line=line,
        knob=verdict.knob,
        polluter=verdict.polluter,
        state_setter=None if verdict.state_setter is None else tuple(verdict.state_setter),
        seed=verdict.seed,
        budget_to_bound=None if failures else budget_to_bound(verdict),
    )


def error_outcome(
    selected: Selected,
    why: str,
    *,
    budget: float,
    directory: str,
    file: Optional[str],
    line: Optional[int],
) -> TestOutcome:
    """A test the engine refused to stress (it raised a usage error for it)."""
    return TestOutcome(
        node_id=selected.node_id,
        reasons=selected.reasons,
        verdict=ERROR,
        engine_verdict=ERROR,
        runs=0,
        failures=0,
        budget_seconds=budget,
        duration=0.0,
        reproduce="",
        directory=directory,
        reason=why,
        file=file,
        line=line,
    )
