"""What the timing phase's evidence decides: race, flaky, not-reproducible, inconclusive.

Quarantine is allowed on a flat rate (``flaky``) or on no failure at all
(``not-reproducible``) only when every knob is bounded: its runs exclude an
increase in the failure rate larger than the margin. Otherwise the reason says
which knob is still open, on what counts, and about what budget would settle it.
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Mapping, Sequence
from typing import Any, Optional

from flakewarden.model.verdicts import FLAKY, INCONCLUSIVE, NON_IDEMPOTENT, NOT_REPRODUCIBLE, RACE
from flakewarden.stress.load import LoadArm
from flakewarden.stress.phase import Finding, also_non_idempotent
from flakewarden.stress.sequential import OPEN, Counts, Sequential
from flakewarden.stress.verdict import KNOB_DESCRIPTIONS, Arm

FOUND_CAUSE_RUNS = 60  # first runs per arm when non-idempotence already explains the failures


class TimingEvidence:
    """The timing phase's arms, its sequential state and its load knobs, as they stand."""

    def __init__(
        self,
        *,
        arms: dict[str, Arm],
        sequential: Sequential,
        loads: dict[str, LoadArm],
        per_process: int,
        processes: int,
        fresh_only: bool,
        not_applicable: Optional[Mapping[str, str]] = None,
    ) -> None:
        self.arms = arms
        # knobs that cannot apply to this test (no thread, no event loop), and why
        self.not_applicable = dict(not_applicable or {})
        # the seeded knobs' schedules: the first failing process's, else the first one's
        self.replays: dict[str, str] = {}
        self.fallback_replays: dict[str, str] = {}
        self.seed = random.SystemRandom().randrange(1, 2**31)  # the first process's seed
        self.sequential = sequential
        self.loads = loads
        self.per_process = per_process
        self.processes = processes
        self.fresh_only = fresh_only
        self.base_durations: list[float] = []
        self.durations: dict[str, list[float]] = {}  # each arm's runs' durations
        self.repeats: list[int] = []  # the runs per process of each round
        self.round: dict[str, list[Counts]] = {}  # this round's processes, per arm
        self.looks = 0
        self.ended_by = ""
        self.seconds = 0.0

    def first_failures(self) -> int:
        return sum(a.first_failures for a in self.arms.values())

    def next_seed(self) -> int:
        """A seed for the next process of a seeded knob: consecutive from a random start."""
        self.seed += 1
        return self.seed

    def found_cause_done(self) -> bool:
        """Non-idempotence explains the failures and every knob had its first runs."""
        return (
            self.fresh_only
            and not self.first_failures()
            and all(self.arms[k].runs >= FOUND_CAUSE_RUNS for k in self.sequential.knobs)
        )


def _statistics(evidence: TimingEvidence) -> dict[str, object]:
    sequential = evidence.sequential
    return {
        "test": sequential.describe(),
        "alpha": sequential.alpha,
        "beta": sequential.beta,
        "race_threshold": sequential.threshold,
        "margin": sequential.margin.describe(),
        "looks_taken": evidence.looks,
        "ended_by": evidence.ended_by,
        "seconds": round(evidence.seconds, 1),
        "runs_per_process": evidence.per_process,
        "runs_per_process_by_round": list(evidence.repeats),
        "processes_per_arm_per_round": evidence.processes,
        "knobs": list(sequential.knobs),
        "not_applicable": dict(evidence.not_applicable),
        "replay": {**evidence.fallback_replays, **evidence.replays},
        "intervals": "two-sided 95% Clopper-Pearson per arm (descriptive); the bounds that "
        "decide are the anytime-valid ones in power",
    }


def _power(evidence: TimingEvidence) -> dict[str, object]:
    sequential = evidence.sequential
    knobs = {
        k: knob_summary(sequential, k, slowdown=evidence.loads[k].slowdown(evidence.base_durations))
        if k in evidence.loads
        else knob_summary(sequential, k)
        for k in sequential.knobs
    }
    return {
        "met": all(sequential.bound(k).met for k in sequential.knobs),
        "beta": sequential.beta,
        "margin": sequential.margin.describe(),
        "margin_absolute": sequential.margin.absolute,
        "margin_relative": sequential.margin.relative,
        "baseline": {"runs": sequential.base.runs, "failures": sequential.base.failures},
        "max_increase": max((sequential.bound(k).increase for k in sequential.knobs), default=1.0),
        "knobs": knobs,
        "not_applicable": dict(evidence.not_applicable),
    }


def _bounds_text(sequential: Sequential) -> str:
    return "; ".join(
        f"{k}: {sequential.bound(k).describe(sequential.beta)}" for k in sequential.knobs
    )


def _budget_to_settle(evidence: TimingEvidence, budget_seconds: float) -> Optional[float]:
    """About how long a budget would settle the open knobs, at this phase's pace so far."""
    sequential = evidence.sequential
    open_knobs = [k for k in sequential.knobs if sequential.state(k) == OPEN]
    runs = sum(a.runs for a in evidence.arms.values())
    if not open_knobs or not runs or evidence.seconds <= 0:
        return None
    needed = [sequential.runs_to_settle(k) for k in open_knobs]
    if any(n is None for n in needed):
        return None
    more = max(n or 0 for n in needed) * (len(open_knobs) + 1)
    total = budget_seconds + more * evidence.seconds / runs
    return float(math.ceil(total / 60) * 60)


def _open_text(evidence: TimingEvidence, budget_seconds: float) -> str:
    sequential = evidence.sequential
    base = sequential.base
    parts = []
    for knob in sequential.knobs:
        if sequential.state(knob) != OPEN:
            continue
        lean = (
            f"leans toward a race (evidence {sequential.e_value(knob):.3g} of the "
            f"{sequential.threshold:g} needed)"
            if sequential.leans(knob)
            else f"not bounded ({sequential.bound(knob).describe(sequential.beta)})"
        )
        parts.append(
            f"{knob} failed {sequential.counts_text(knob)} against {base.failures}/{base.runs} "
            f"at baseline and {lean}"
        )
    budget = _budget_to_settle(evidence, budget_seconds)
    why = {"budget": "the budget ended first", "cap": "the --runs cap ended it first"}.get(
        evidence.ended_by, "sampling ended first"
    )
    return (
        "; ".join(parts)
        + f"; {why}"
        + (
            f": a budget of about {budget:.0f} s (--budget-seconds {budget:.0f}) should settle it"
            if budget
            else ": more runs at the rates seen would not bound it within the margin"
        )
    )


def _not_applicable_text(evidence: TimingEvidence) -> str:
    """The knobs left out because they cannot apply, in a few words."""
    skipped = evidence.not_applicable
    if not skipped:
        return ""
    threads = [k for k in skipped if "thread" in skipped[k]]
    loops = [k for k in skipped if k not in threads]
    why = [
        *([f"{', '.join(threads)}: no thread ran beside the test"] if threads else []),
        *([f"{', '.join(loops)}: no event loop ran"] if loops else []),
    ]
    return f"; not applicable, so not run: {'; '.join(why)}"


def settle_knobs(evidence: TimingEvidence) -> dict[str, Arm]:
    """Each knob's arm with its always-valid p-value and Bonferroni adjustment over the knobs."""
    sequential = evidence.sequential
    settled = {}
    for knob in sequential.knobs:
        p = sequential.p_value(knob)
        adjusted = min(1.0, len(sequential.knobs) * p)
        settled[knob] = dataclasses.replace(evidence.arms[knob], p_value=p, p_adjusted=adjusted)
    return settled


def load_notes(evidence: TimingEvidence) -> list[str]:
    """What each load knob reached, for the verdict's notes."""
    return [f"load: {load.statement(evidence.base_durations)}" for load in evidence.loads.values()]


def conclude(
    evidence: TimingEvidence,
    arms: Sequence[Arm],
    non_idempotent: Mapping[str, object],
    budget_seconds: float,
) -> Finding:
    """The timing phase's verdict from its evidence and every arm of the run (``arms``).

    A race wins; then a non-idempotent test whose first runs never failed; then
    failures at a flat rate (flaky, when every knob is bounded, else
    inconclusive); then no failure at all (not-reproducible).
    """
    if evidence.sequential.races():
        return _race(evidence, non_idempotent)
    fields = _fields(evidence)
    if evidence.fresh_only and not evidence.first_failures():
        return _non_idempotent(evidence, arms, non_idempotent, fields)
    # A non-idempotent test's in-process repeats fail by its known cause: only first
    # runs in a process speak for any other failure.
    failures = sum(a.first_failures if evidence.fresh_only else a.failures for a in arms)
    if failures:
        return _failed(evidence, arms, failures, budget_seconds, fields)
    return _clean(evidence, arms, budget_seconds, fields)


def _fields(evidence: TimingEvidence) -> dict[str, Any]:
    return {
        "statistics": _statistics(evidence),
        "power": _power(evidence),
        "load": {k: load.summary(evidence.base_durations) for k, load in evidence.loads.items()},
    }


def _race(evidence: TimingEvidence, non_idempotent: Mapping[str, object]) -> Finding:
    sequential = evidence.sequential
    races = sequential.races()
    knob, others = races[0], races[1:]
    arm, base = evidence.arms[knob], evidence.arms["baseline"]
    return Finding(
        RACE,
        f"the failure rate climbs under {knob} ({KNOB_DESCRIPTIONS[knob]}): "
        f"{arm.failures}/{arm.runs} against {base.failures}/{base.runs} at baseline"
        + (f"; also a race under: {', '.join(others)}" if others else "")
        + (
            f"; a failing schedule replays with {evidence.replays[knob]} (see the arm's command)"
            if knob in evidence.replays
            else ""
        )
        + also_non_idempotent(non_idempotent),
        f"race: the knob's mixture likelihood ratio reached {sequential.e_value(knob):.3g} "
        f">= {sequential.threshold:g} ({len(sequential.knobs)} knobs / alpha "
        f"{sequential.alpha:g}) at look {evidence.looks}, valid at any number of looks",
        knob=knob,
        **_fields(evidence),
    )


def _failed(
    evidence: TimingEvidence,
    arms: Sequence[Arm],
    failures: int,
    budget_seconds: float,
    fields: dict[str, Any],
) -> Finding:
    """Failures and no race: flaky when every knob is bounded, else inconclusive."""
    sequential = evidence.sequential
    runs = sum(a.runs for a in arms)
    if fields["power"]["met"]:
        return Finding(
            FLAKY,
            f"failed {failures} of {runs} runs at a flat rate: no knob raised it beyond the "
            f"margin ({sequential.margin.describe()}): {_bounds_text(sequential)}",
            f"flaky: every knob bounded within the margin at look {evidence.looks}; no knob "
            f"reached the race threshold {sequential.threshold:g}",
            **fields,
        )
    return Finding(
        INCONCLUSIVE,
        f"failed {failures} of {runs} runs, but no rule was crossed: "
        + _open_text(evidence, budget_seconds)
        + ". Quarantine is refused until a knob effect is found or ruled out.",
        f"inconclusive: a knob still open after {evidence.looks} looks "
        f"(race threshold {sequential.threshold:g}, margin {sequential.margin.describe()})",
        **fields,
    )


def _clean(
    evidence: TimingEvidence, arms: Sequence[Arm], budget_seconds: float, fields: dict[str, Any]
) -> Finding:
    """No failure at all: not-reproducible, which allows quarantine only when bounded."""
    sequential = evidence.sequential
    runs = sum(a.runs for a in arms)
    phases = [
        "isolation",
        "timing",
        *(p for p in ("order", "seed") if any(a.phase == p for a in arms)),
    ]
    tried = ", ".join(sequential.knobs) + _not_applicable_text(evidence)
    if fields["power"]["met"]:
        reason = (
            f"no failure in {runs} runs (phases: {', '.join(phases)}; knobs: {tried}): "
            f"{_bounds_text(sequential)}. Every knob is bounded within the margin "
            f"({sequential.margin.describe()})."
        )
        rule = "not-reproducible: zero failures, and every knob bounded within the margin"
    else:
        reason = (
            f"no failure in {runs} runs (phases: {', '.join(phases)}; knobs: {tried}), but the "
            f"runs do not rule out a knob effect above the margin: "
            f"{_open_text(evidence, budget_seconds)}. "
            "Quarantine is refused: no failure in too few runs is absence of evidence."
        )
        rule = "not-reproducible: zero failures, but a knob not bounded within the margin"
    return Finding(NOT_REPRODUCIBLE, reason, rule, **fields)


def _non_idempotent(
    evidence: TimingEvidence,
    arms: Sequence[Arm],
    found: Mapping[str, object],
    fields: dict[str, Any],
) -> Finding:
    first_runs = sum(a.first_runs for a in arms)
    return Finding(
        NON_IDEMPOTENT,
        f"it leaks state into itself: it passed all {first_runs} of its first runs in a "
        f"process (isolation, timing knobs in fresh processes"
        + (", order" if any(a.phase == "order" for a in arms) else "")
        + (", seeds" if any(a.phase == "seed" for a in arms) else "")
        + f") but failed {found['repeat_failures']}/{found['repeat_runs']} in-process "
        "repeats; no order, seed or timing cause was found; " + _bounds_text(evidence.sequential),
        f"non-idempotent: {found['rule']}, and no first run in a process failed",
        **fields,
    )


def knob_summary(
    sequential: Sequential, knob: str, *, slowdown: Optional[float] = None
) -> dict[str, object]:
    """One knob's evidence for ``verdict.json``."""
    bound = sequential.bound(knob)
    summary: dict[str, object] = {
        "state": sequential.state(knob),
        "runs": sequential.totals[knob].runs,
        "failures": sequential.totals[knob].failures,
        # the arm's count in the evidence table: every level of a load knob that escalated
        "runs_all_levels": sequential.all_levels(knob).runs,
        "failures_all_levels": sequential.all_levels(knob).failures,
        "e_value": round(sequential.e_value(knob), 6),
        "race_threshold": sequential.threshold,
        "upper": round(bound.upper, 6),
        "increase_bound": round(bound.increase, 6),
        "margin": round(bound.margin, 6),
        "bounded": bound.met,
        "statement": bound.describe(sequential.beta),
    }
    if slowdown is not None:
        summary["slowdown"] = round(slowdown, 2)
    return summary
