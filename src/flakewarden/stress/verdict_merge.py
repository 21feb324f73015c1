"""Merging several runners' stress shards of one test into one verdict.

What one runner proves (a real break, a race, a found cause) is not undone by
another's clean runs; otherwise the timing arms are pooled and each runner's
baseline is compared with the others'.
"""

from __future__ import annotations

import dataclasses

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
    for power, label in powers:
        for knob, row in (power.get("knobs") or {}).items():
            knobs[f"{knob}@{label}"] = row
    merged: dict[str, object] = {
        "met": bool(usable) and all(shard.bounded for shard, _ in usable),
        "margin": next((p.get("margin") for p, _ in powers if p.get("margin")), ""),
        "knobs": knobs,
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
    labels = [_shard_label(s, n) for s, n in zip(shards, names)]
    if len(set(labels)) != len(labels):
        labels = [f"{label}#{i + 1}" for i, label in enumerate(labels)]
    arms: list[Arm] = []
    for shard, label in zip(shards, labels):
        for arm in shard.arms:
            arms.append(dataclasses.replace(arm, shard=label))
    notes = [f"{label}: {shard.verdict}: {shard.reason}" for shard, label in zip(shards, labels)]
    usable = [(s, label) for s, label in zip(shards, labels) if s.verdict != ERROR]
    base = Verdict(
        test_id=shards[0].test_id,
        verdict=ERROR,
        reason="",
        rule="",
        arms=arms,
        first_failure=next((s.first_failure for s in shards if s.first_failure), None),
        environment={"shards": {label: s.environment for s, label in zip(shards, labels)}},
        command=shards[0].command,
        started_at=min(s.started_at for s in shards),
        finished_at=max(s.finished_at for s in shards),
        duration=sum(s.duration for s in shards),
        version=shards[0].version,
        notes=notes,
        shards=labels,
        non_idempotent=next((s.non_idempotent for s in shards if s.non_idempotent), {}),
    )
    if not usable:
        base.reason = "every shard failed to run the test"
        base.rule = "error: no shard could run the test"
        return base
    for name in PRECEDENCE:
        for shard, label in usable:
            if shard.verdict == name:
                base.verdict = name
                base.reason = f"on {label}: {shard.reason}"
                base.rule = f"merge: a {name} shard decides; {shard.rule}"
                base.knob = None if shard.knob is None else f"{shard.knob}@{label}"
                base.polluter, base.seed = shard.polluter, shard.seed
                base.order, base.seeds = shard.order, shard.seeds
                base.statistics = shard.statistics
                return base
    pooled: dict[str, Arm] = {}
    for arm in arms:
        if arm.phase == "timing" and any(arm.shard == label for _, label in usable):
            total = pooled.setdefault(arm.knob, Arm("timing", arm.knob, shard="pooled"))
            total.runs += arm.runs
            total.failures += arm.failures
            total.first_runs += arm.first_runs
            total.first_failures += arm.first_failures
            total.processes += arm.processes
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
            rest_runs = baseline.runs - arm.runs
            rest_failures = baseline.failures - arm.failures
            raw[f"runner:{arm.shard}"] = stats.fisher_greater(
                rest_failures, rest_runs, arm.failures, arm.runs
            )
    adjusted = stats.holm(raw) if raw else {}
    for knob, arm in pooled.items():
        arm.p_value, arm.p_adjusted = raw.get(knob), adjusted.get(knob)
    base.arms = arms + list(pooled.values())
    base.statistics = {
        "test": "one-sided Fisher exact test on counts pooled over shards",
        "multiplicity": f"Holm across {len(raw)} comparisons (knobs and runners)",
        "alpha": stats.ALPHA,
        "p_values": raw,
        "p_adjusted": adjusted,
    }
    hits = sorted((k for k, p in adjusted.items() if p < stats.ALPHA), key=lambda k: adjusted[k])
    runs = sum(a.runs for a in arms)
    failures = sum(a.failures for a in arms)
    # A flat rate or a clean record on the pooled counts allows quarantine only when
    # every runner bounded every knob: one runner's missing power is missing evidence.
    base.power = _merged_power(usable)
    base.load = {
        f"{knob}@{label}": summary
        for shard, label in usable
        for knob, summary in shard.load.items()
    }
    inconclusive = [(s, label) for s, label in usable if s.verdict == INCONCLUSIVE]
    if hits:
        knob = hits[0]
        base.verdict, base.knob = RACE, knob
        base.reason = f"pooled over {len(usable)} runners, the failure rate climbs under {knob}" + (
            " (this runner fails more often than the others)" if knob.startswith("runner:") else ""
        )
        base.rule = (
            f"merge race: Holm-adjusted one-sided Fisher p = {adjusted[knob]:.3g} < {stats.ALPHA}"
        )
    elif inconclusive:
        shard, label = inconclusive[0]
        base.verdict = INCONCLUSIVE
        base.reason = f"on {label}: {shard.reason}"
        base.rule = f"merge: an inconclusive shard leaves the question open; {shard.rule}"
    elif failures:
        base.verdict = FLAKY
        base.reason = (
            f"failed {failures} of {runs} runs over {len(usable)} runners at a flat rate; "
            "no knob and no runner raised it significantly"
        )
        base.rule = f"merge flaky: no Holm-adjusted p below {stats.ALPHA}"
    else:
        base.verdict = NOT_REPRODUCIBLE
        base.reason = (
            f"no failure in {runs} runs over {len(usable)} runners; the failure rate is below "
            f"{100 * stats.upper_bound(0, runs):.2f}% (95% one-sided Clopper-Pearson), and "
            + (
                "every runner bounded every knob within the margin"
                if base.bounded
                else "not every runner bounded every knob within the margin: quarantine is "
                "refused, absence of a failure in too few runs is not evidence"
            )
        )
        base.rule = "merge not-reproducible: zero failures on every shard"
    return base
