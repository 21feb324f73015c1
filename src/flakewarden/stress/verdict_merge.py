"""Merging several runners' stress shards of one test into one verdict.

What one runner proves (a real break, a race, a found cause) is not undone by
another's clean runs; otherwise the timing arms are pooled and each runner's
baseline is compared with the others'.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import NamedTuple, Optional

from flakewarden.errors import ReportError
from flakewarden.model.verdicts import (
    ERROR,
    FLAKY,
    INCONCLUSIVE,
    NOT_REPRODUCIBLE,
    PRECEDENCE,
    RACE,
)
from flakewarden.stress import stats
from flakewarden.stress.verdict import Arm, Verdict


def _shard_label(verdict: Verdict, fallback: str) -> str:
    runner = str(verdict.environment.get("runner") or "")
    return runner or fallback


def _merged_power(usable: list[tuple[Verdict, str]]) -> dict[str, object]:
    """The shards' bounds together: met only when every shard bounded every knob.

    The largest increase any shard left unexcluded is the merged one, compared
    with the margin at the highest baseline rate of the shards, which is what a
    quarantine policy reads from the marker.
    """
    powers = [(shard.power, label) for shard, label in usable]
    increases = [p.get("max_increase") for p, _ in powers]
    knobs: dict[str, object] = {}
    skipped: dict[str, object] = {}
    for power, label in powers:
        for knob, row in (power.get("knobs") or {}).items():
            knobs[f"{knob}@{label}"] = row
        why_not = power.get("not_applicable")
        for knob, why in (why_not if isinstance(why_not, dict) else {}).items():
            skipped[f"{knob}@{label}"] = str(why)
    merged: dict[str, object] = {
        "met": bool(usable) and all(shard.bounded for shard, _ in usable),
        "margin": next((p.get("margin") for p, _ in powers if p.get("margin")), ""),
        "knobs": knobs,
        "not_applicable": skipped,
        "shards": {label: power for power, label in powers},
    }
    if increases and all(isinstance(i, (int, float)) for i in increases):
        merged["max_increase"] = max(float(i) for i in increases if i is not None)
        worst = max(
            (p.get("baseline") or {} for p, _ in powers),
            key=lambda b: int(b.get("failures") or 0) / int(b.get("runs") or 1),
        )
        merged["baseline"] = dict(worst)
    return merged


class Outcome(NamedTuple):
    """What a merge concluded: the verdict's name, why, the rule, and a knob for a race."""

    verdict: str
    reason: str
    rule: str
    knob: Optional[str] = None


Shards = Sequence[tuple[Verdict, str]]  # each shard with its label


def shard_labels(shards: Sequence[Verdict], names: Sequence[str]) -> list[str]:
    """Each shard's runner name (else its directory), numbered when two are the same."""
    labels = [_shard_label(s, n) for s, n in zip(shards, names)]
    if len(set(labels)) != len(labels):
        labels = [f"{label}#{i + 1}" for i, label in enumerate(labels)]
    return labels


def labelled_arms(shards: Shards) -> list[Arm]:
    """Every shard's arms, each marked with the shard it ran on."""
    return [dataclasses.replace(arm, shard=label) for shard, label in shards for arm in shard.arms]


def _record(shards: Shards, arms: list[Arm]) -> Verdict:
    """What every merged verdict carries, whatever it decides: the shards' record."""
    first = shards[0][0]
    return Verdict(
        test_id=first.test_id,
        verdict=ERROR,
        reason="",
        rule="",
        arms=arms,
        first_failure=next((s.first_failure for s, _ in shards if s.first_failure), None),
        environment={"shards": {label: s.environment for s, label in shards}},
        command=first.command,
        started_at=min(s.started_at for s, _ in shards),
        finished_at=max(s.finished_at for s, _ in shards),
        duration=sum(s.duration for s, _ in shards),
        version=first.version,
        notes=[f"{label}: {shard.verdict}: {shard.reason}" for shard, label in shards],
        shards=[label for _, label in shards],
        non_idempotent=next((s.non_idempotent for s, _ in shards if s.non_idempotent), {}),
        # the first shard's lines to open, until a deciding shard's replace them
        where=next((s.where for s, _ in shards if s.where), {}),
    )


def deciding_shard(usable: Shards) -> Optional[tuple[Verdict, str]]:
    """The shard whose found cause decides, by ``PRECEDENCE``; None when no shard found one."""
    for name in PRECEDENCE:
        for shard, label in usable:
            if shard.verdict == name:
                return shard, label
    return None


def _decided_by(base: Verdict, shard: Verdict, label: str) -> Verdict:
    return dataclasses.replace(
        base,
        verdict=shard.verdict,
        reason=f"on {label}: {shard.reason}",
        rule=f"merge: a {shard.verdict} shard decides; {shard.rule}",
        knob=None if shard.knob is None else f"{shard.knob}@{label}",
        polluter=shard.polluter,
        seed=shard.seed,
        order=shard.order,
        seeds=shard.seeds,
        statistics=shard.statistics,
        where=shard.where,
        timing=shard.timing,
    )


def pool_timing_arms(arms: Sequence[Arm], labels: Iterable[str]) -> dict[str, Arm]:
    """The timing arms of the shards labelled ``labels``, summed per knob."""
    wanted = set(labels)
    pooled: dict[str, Arm] = {}
    for arm in arms:
        if arm.phase == "timing" and arm.shard in wanted:
            total = pooled.get(arm.knob) or Arm("timing", arm.knob, shard="pooled")
            pooled[arm.knob] = dataclasses.replace(
                total,
                runs=total.runs + arm.runs,
                failures=total.failures + arm.failures,
                first_runs=total.first_runs + arm.first_runs,
                first_failures=total.first_failures + arm.first_failures,
                processes=total.processes + arm.processes,
            )
    return pooled


def comparisons(
    pooled: dict[str, Arm], arms: Sequence[Arm], labels: Sequence[str]
) -> dict[str, float]:
    """One-sided Fisher p per pooled knob against the pooled baseline, and per runner.

    A runner's baseline is compared with the other runners' baselines together
    (``runner:<label>``): a rate that climbs on one smaller runner is a race.
    """
    baseline = pooled.get("baseline", Arm("timing", "baseline", shard="pooled"))
    raw: dict[str, float] = {}
    for knob, arm in pooled.items():
        if knob != "baseline":
            raw[knob] = stats.fisher_greater(
                baseline.failures, baseline.runs, arm.failures, arm.runs
            )
    shard_baselines = [
        a for a in arms if a.phase == "timing" and a.knob == "baseline" and a.shard in labels
    ]
    if len(shard_baselines) > 1:
        for arm in shard_baselines:
            raw[f"runner:{arm.shard}"] = stats.fisher_greater(
                baseline.failures - arm.failures, baseline.runs - arm.runs, arm.failures, arm.runs
            )
    return raw


def pooled_outcome(
    adjusted: dict[str, float],
    usable: Shards,
    runs: int,
    failures: int,
    bounded: bool,
) -> Outcome:
    """A knob or runner significant after Holm is a race; else an inconclusive shard keeps
    the question open; else failures are flaky and none is not-reproducible."""
    hits = sorted((k for k, p in adjusted.items() if p < stats.ALPHA), key=lambda k: adjusted[k])
    if hits:
        knob = hits[0]
        return Outcome(
            RACE,
            f"pooled over {len(usable)} runners, the failure rate climbs under {knob}"
            + (
                " (this runner fails more often than the others)"
                if knob.startswith("runner:")
                else ""
            ),
            f"merge race: Holm-adjusted one-sided Fisher p = {adjusted[knob]:.3g} < {stats.ALPHA}",
            knob,
        )
    inconclusive = [(s, label) for s, label in usable if s.verdict == INCONCLUSIVE]
    if inconclusive:
        shard, label = inconclusive[0]
        return Outcome(
            INCONCLUSIVE,
            f"on {label}: {shard.reason}",
            f"merge: an inconclusive shard leaves the question open; {shard.rule}",
        )
    if failures:
        return Outcome(
            FLAKY,
            f"failed {failures} of {runs} runs over {len(usable)} runners at a flat rate; "
            "no knob and no runner raised it significantly",
            f"merge flaky: no Holm-adjusted p below {stats.ALPHA}",
        )
    return Outcome(
        NOT_REPRODUCIBLE,
        f"no failure in {runs} runs over {len(usable)} runners; the failure rate is below "
        f"{100 * stats.upper_bound(0, runs):.2f}% (95% one-sided Clopper-Pearson), and "
        + (
            "every runner bounded every knob within the margin"
            if bounded
            else "not every runner bounded every knob within the margin: quarantine is "
            "refused, absence of a failure in too few runs is not evidence"
        ),
        "merge not-reproducible: zero failures on every shard",
    )


def _pooled(base: Verdict, usable: Shards, labels: Sequence[str]) -> Verdict:
    """No shard found a cause: pool the timing arms and test knobs and runners in one family."""
    arms = base.arms
    pooled = pool_timing_arms(arms, [label for _, label in usable])
    raw = comparisons(pooled, arms, labels)
    adjusted = stats.holm(raw) if raw else {}
    pooled = {
        knob: dataclasses.replace(arm, p_value=raw.get(knob), p_adjusted=adjusted.get(knob))
        for knob, arm in pooled.items()
    }
    # A flat rate or a clean record on the pooled counts allows quarantine only when
    # every runner bounded every knob: one runner's missing power is missing evidence.
    power = _merged_power(list(usable))
    outcome = pooled_outcome(
        adjusted,
        usable,
        sum(a.runs for a in arms),
        sum(a.failures for a in arms),
        power.get("met") is True,
    )
    return dataclasses.replace(
        base,
        verdict=outcome.verdict,
        reason=outcome.reason,
        rule=outcome.rule,
        knob=outcome.knob,
        arms=arms + list(pooled.values()),
        statistics={
            "test": "one-sided Fisher exact test on counts pooled over shards",
            "multiplicity": f"Holm across {len(raw)} comparisons (knobs and runners)",
            "alpha": stats.ALPHA,
            "p_values": raw,
            "p_adjusted": adjusted,
        },
        power=power,
        load={
            f"{knob}@{label}": summary
            for shard, label in usable
            for knob, summary in shard.load.items()
        },
    )


def merge_verdicts(shards: list[Verdict], names: list[str]) -> Verdict:
    """One verdict from several runners' shards of the same test.

    A shard that found a real break, a race, or an order, seed or
    non-idempotence cause decides (in that order): what one runner proves is
    not undone by another's clean runs. Otherwise the timing arms are pooled
    per knob and, as one more knob, each runner's baseline is tested against the other runners'
    baselines (a rate that climbs on a smaller runner is a race); all
    comparisons share one Holm family at alpha 0.05, tested once on the pooled
    counts.
    """
    if not shards:
        raise ReportError("nothing to merge")
    test_ids = {s.test_id for s in shards}
    if len(test_ids) != 1:
        raise ReportError(f"the shards are verdicts for different tests: {sorted(test_ids)}")
    labels = shard_labels(shards, names)
    labelled = list(zip(shards, labels))
    base = _record(labelled, labelled_arms(labelled))
    usable = [(s, label) for s, label in labelled if s.verdict != ERROR]
    if not usable:
        return dataclasses.replace(
            base,
            reason="every shard failed to run the test",
            rule="error: no shard could run the test",
        )
    decided = deciding_shard(usable)
    if decided is not None:
        return _decided_by(base, *decided)
    return _pooled(base, usable, labels)
