"""The timing phase: interleaved rounds of baseline and tightening knobs until the evidence decides.

Every round runs the baseline and each knob still open (switch interval 1e-5,
CPU burners, a duty-cycle throttle), rotating their order so that drift in the
machine's load hits every arm alike. After each round ``sequential.Sequential``
weighs each knob against the baseline: a race, a knob bounded within the
margin, or still open. Rounds go on while a knob is open and the budget allows;
a knob already bounded gets no more runs, so the open ones get them. The load
knobs are escalated until the test's own measured slowdown reaches the target
(``load``).

A test that leaks state into itself (``Facts.non_idempotent``) is never
repeated in-process here: each round gives each arm as many fresh processes of
one run each. Its cause is already found, so the phase only looks for a race
among first runs, up to ``FOUND_CAUSE_RUNS`` per arm.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Sequence
from typing import Callable

from flakewarden.model import AttemptOutcome
from flakewarden.stress.knobs import (
    SEED_VARIABLES,
    UNLOADED_KNOBS,
    applicable,
    knob_env,
    replay_of,
)
from flakewarden.stress.load import LOAD_KNOBS, LoadArm
from flakewarden.stress.phase import PhaseContext, PhaseEvidence, PhaseResult
from flakewarden.stress.runs import NO_RANDOMLY, Job, JobResult
from flakewarden.stress.sequential import Counts, Sequential
from flakewarden.stress.throttle import period_for, throttled
from flakewarden.stress.timing_verdict import (
    FOUND_CAUSE_RUNS,
    TimingEvidence,
    conclude,
    load_notes,
    settle_knobs,
)
from flakewarden.stress.verdict import Arm

# Runs per process: enough to fill about TARGET_PROCESS_SECONDS, from MIN_REPEAT to MAX_REPEAT
# (a fresh process's first repetition fails less often than later ones). A fast test gets
# more, up to FAST_MAX_REPEAT, to fill FAST_PROCESS_SECONDS: a fresh process costs ~0.1-0.3 s
# before its first run, so a 1 ms test repeated 20 times spent nine tenths of the phase
# starting processes. The race test pairs processes whatever their runs share, and the bound
# counts processes instead of runs when failures bunch, so neither loses its validity.
MAX_REPEAT = 20
MIN_REPEAT = 5
TARGET_PROCESS_SECONDS = 2.0
FAST_MAX_REPEAT = 500
FAST_PROCESS_SECONDS = 0.5


def runs_per_process(test_seconds: float) -> int:
    """In-process repeats for a test that takes ``test_seconds`` a run."""
    seconds = max(test_seconds, 1e-6)
    usual = min(MAX_REPEAT, max(MIN_REPEAT, TARGET_PROCESS_SECONDS / seconds))
    fast = min(FAST_MAX_REPEAT, FAST_PROCESS_SECONDS / seconds)
    return int(max(usual, fast))


def timing_phase(ctx: PhaseContext) -> PhaseResult:
    """Interleaved rounds until a knob is a race, every knob is bounded, or the budget ends."""
    options = ctx.options
    found = PhaseEvidence(ctx)
    repeat = runs_per_process(ctx.probe.test_seconds)
    if options.runs is not None:
        repeat = min(repeat, max(1, options.runs))
    # Runs per round per arm: ``repeat`` in one process; a non-idempotent test gets them
    # from fresh processes of one run each, at most MAX_REPEAT (a fresh process is the cost).
    fresh_only = bool(ctx.facts.non_idempotent)
    test_id = [options.test_id]
    knobs, not_applicable = applicable(ctx.facts.concurrency)
    # A knob that pauses threads or reorders tasks may slow each run many times over: its
    # first round runs at most MAX_REPEAT a process, and every round after runs as many as
    # the slowest unloaded arm's runs allow (the same for every arm: the pairs need it).
    slowing = any(k in SEED_VARIABLES for k in knobs)
    first = min(repeat, MAX_REPEAT) if slowing else repeat
    per_process, processes = (1, min(repeat, MAX_REPEAT)) if fresh_only else (first, 1)
    arms = {
        name: Arm("timing", name, repeat=per_process, command=ctx.reproduce(test_id, knob=name))
        for name in ["baseline", *knobs]
    }
    found.arms.extend(arms.values())
    evidence = TimingEvidence(
        arms=arms,
        sequential=Sequential(knobs, margin=options.margin),
        loads={k: LoadArm(k, options.cores) for k in LOAD_KNOBS},
        per_process=per_process,
        processes=processes,
        fresh_only=fresh_only,
        not_applicable=not_applicable,
    )
    found.notes.extend(f"timing: {knob}: {why}" for knob, why in not_applicable.items())
    ctx.say(
        f"timing: interleaved rounds of {per_process * processes} runs per knob "
        f"({', '.join(knobs)}) until the evidence decides or the "
        f"{options.budget_seconds:g} s budget ends"
        + (" (fresh processes only: the test is non-idempotent)" if fresh_only else "")
        + (f"; not applicable: {', '.join(not_applicable)}" if not_applicable else "")
    )
    _sample(ctx, found, evidence)
    for knob, settled in settle_knobs(evidence).items():
        evidence.arms[knob] = found.replace(evidence.arms[knob], settled)
    cpu, throttle = evidence.loads["cpu-load"], evidence.loads["throttle"]
    commands = {
        "cpu-load": ctx.reproduce(test_id, burners=cpu.burners),
        "throttle": ctx.reproduce(test_id, run_share=throttle.run_share),
        **{
            knob: ctx.reproduce(test_id, knob=knob, replay=replay)
            for knob, replay in {**evidence.fallback_replays, **evidence.replays}.items()
        },
    }
    for name, arm in evidence.arms.items():  # what the last round ran (each round's: statistics)
        done = dataclasses.replace(
            arm, repeat=evidence.per_process, command=commands.get(name, arm.command)
        )
        evidence.arms[name] = found.replace(arm, done)
    found.notes.extend(load_notes(evidence))
    finding = conclude(
        evidence, [*ctx.arms, *found.arms], ctx.facts.non_idempotent, options.budget_seconds
    )
    return found.result(finding)


def _sample(ctx: PhaseContext, found: PhaseEvidence, evidence: TimingEvidence) -> None:
    """Run rounds until the evidence, the --runs cap or the budget ends sampling."""
    started = ctx.budget.elapsed()
    longest = 0.0  # the longest round so far: what the next one is expected to take
    while True:
        stop = _budget_stop(ctx, evidence.looks, longest)
        if stop:
            found.note(stop)
            evidence.ended_by = "budget"
            break
        shares = _shares(ctx, evidence)
        if not any(shares[k] for k in evidence.sequential.knobs):
            evidence.ended_by = "cap"
            break
        round_started = ctx.budget.elapsed()
        _round(ctx, found, evidence, shares)
        longest = max(longest, ctx.budget.elapsed() - round_started)
        _retune(ctx, found, evidence)
        sequential = evidence.sequential
        if sequential.races():
            evidence.ended_by = "race"
            break
        if sequential.settled():
            evidence.ended_by = "bounded"
            break
        if evidence.found_cause_done():
            evidence.ended_by = "found cause"
            break
    evidence.seconds = ctx.budget.elapsed() - started


def _retune(ctx: PhaseContext, found: PhaseEvidence, evidence: TimingEvidence) -> None:
    """Runs per process for the next round, from the slowest unloaded arm's runs so far.

    Every arm runs as many per process in a round (a knob process and its paired baseline
    process must be alike when the knob changes nothing); the load arms are not looked
    at, since slowing the test is what they are for.
    """
    evidence.repeats.append(evidence.per_process)
    if evidence.fresh_only:
        return
    medians = [
        statistics.median(durations)
        for arm, durations in evidence.durations.items()
        if arm in ("baseline", *UNLOADED_KNOBS) and durations
    ]
    if not medians:
        return
    repeat = runs_per_process(max(medians))
    if ctx.options.runs is not None:
        repeat = min(repeat, max(1, ctx.options.runs))
    if repeat != evidence.per_process:
        found.note(
            f"timing: {repeat} runs per process from round {evidence.looks + 1} on (was "
            f"{evidence.per_process}): the slowest unloaded arm's run takes "
            f"{1000 * max(medians):.1f} ms"
        )
        evidence.per_process = repeat


def _shares(ctx: PhaseContext, evidence: TimingEvidence) -> dict[str, int]:
    """Processes per arm for the next round: the sequential allocation, less arms at a cap."""
    # Each share is this many processes of an unloaded arm (``_unloaded_step``).
    shares = evidence.sequential.allocation(max(1, ctx.options.cores // 4) * evidence.processes)
    cap = ctx.options.runs
    knobs = evidence.sequential.knobs
    for knob in knobs:
        runs = evidence.arms[knob].runs
        if cap is not None and runs >= cap:
            shares[knob] = 0
        if evidence.fresh_only and not evidence.first_failures() and runs >= FOUND_CAUSE_RUNS:
            shares[knob] = 0
    if not any(shares[k] for k in knobs):
        shares["baseline"] = 0
    return shares


def _round(
    ctx: PhaseContext, found: PhaseEvidence, evidence: TimingEvidence, shares: dict[str, int]
) -> None:
    evidence.round = {}
    steps: list[Callable[[], None]] = [
        lambda: _unloaded_step(ctx, found, evidence, shares),
        lambda: _burn_step(ctx, found, evidence, shares["cpu-load"]),
        lambda: _throttle_step(ctx, found, evidence, shares["throttle"]),
    ]
    shift = evidence.looks % len(steps)
    for step in steps[shift:] + steps[:shift]:
        step()
        # A knob whose pairs so far cross the threshold is a race now: the round's other
        # steps would add nothing to its evidence (stopping at any pair is what Ville's
        # inequality allows), and a throttled step can take most of a round.
        crossed = evidence.sequential.crossing(evidence.round)
        if crossed:
            found.note(
                f"timing: round {evidence.looks + 1} ended once {crossed} crossed the race "
                "threshold, before the arms still to run in it"
            )
            break
    evidence.sequential.add_round(evidence.round)
    evidence.looks += 1
    for knob, load in evidence.loads.items():
        level = load.level_name()
        reached = load.slowdown(evidence.base_durations)
        if load.escalate(evidence.base_durations):
            # The knob is now a heavier load: its bound starts afresh at the new level.
            evidence.sequential.reset(knob)
            found.note(
                f"timing: {knob} reached {reached or 0:.1f}x at {level}, short of the target; "
                f"escalated to {load.level_name()}"
            )


def _durations(results: Sequence[JobResult]) -> list[float]:
    return [r.duration for result in results for r in result.records]


def _per_process(results: Sequence[JobResult]) -> list[Counts]:
    """Each process's runs and failures, counted as ``StressProcesses.tally`` counts them."""
    out = []
    for result in results:
        ran = [r for r in result.records if r.outcome != AttemptOutcome.SKIPPED]
        failed = sum(1 for r in ran if r.outcome.is_failure)
        died = int(result.died)
        out.append(Counts(len(ran) + died, failed + died))
    return out


def _count(
    found: PhaseEvidence, evidence: TimingEvidence, arm: str, results: Sequence[JobResult]
) -> None:
    evidence.arms[arm] = found.tally(evidence.arms[arm], results)
    evidence.round.setdefault(arm, []).extend(_per_process(results))
    evidence.durations.setdefault(arm, []).extend(_durations(results))
    for result in results:
        replay = replay_of(arm, result.job.env)
        if not replay or arm in evidence.replays:
            continue
        # A seeded knob's replay: the seed of its first failing process (else its first).
        if result.died or any(r.outcome.is_failure for r in result.records):
            evidence.replays[arm] = replay
        else:
            evidence.fallback_replays.setdefault(arm, replay)


def _jobs(
    ctx: PhaseContext, knob: str, count: int, per_process: int, env: dict[str, str]
) -> list[Job]:
    test_id = [ctx.test_id]
    return [Job("timing", knob, test_id, per_process, NO_RANDOMLY, dict(env)) for _ in range(count)]


def _unloaded_step(
    ctx: PhaseContext, found: PhaseEvidence, evidence: TimingEvidence, shares: dict[str, int]
) -> None:
    """Baseline, switch-interval, yield and asyncio processes, leaving half the cores idle.

    Running more at once would load the machine and raise the baseline's
    rate for exactly the timing-sensitive tests the load knobs are meant to
    expose, so the unloaded arms only use up to half of the cores. Each process
    of a seeded knob gets a seed of its own, kept with its results for replay.
    """
    unit = max(1, ctx.options.cores // 4) * evidence.processes
    per_process = evidence.per_process
    counts = {"baseline": shares["baseline"] * unit}
    jobs = _jobs(ctx, "baseline", counts["baseline"], per_process, {})
    for knob in UNLOADED_KNOBS:
        if knob not in evidence.arms:
            continue
        counts[knob] = shares.get(knob, 0) * unit
        jobs += [
            Job("timing", knob, [ctx.test_id], per_process, NO_RANDOMLY, env)
            for env in (knob_env(knob, evidence.next_seed()) for _ in range(counts[knob]))
        ]
    if not jobs:
        return
    results = ctx.run(jobs, max(1, ctx.options.cores // 2))
    start = 0
    for arm, count in counts.items():
        _count(found, evidence, arm, results[start : start + count])
        start += count
    evidence.base_durations.extend(_durations(results[: counts["baseline"]]))


def _burn_step(
    ctx: PhaseContext, found: PhaseEvidence, evidence: TimingEvidence, share: int
) -> None:
    """Test processes one at a time while the load arm's burners hold the cores."""
    count = share * evidence.processes
    if not count:
        return
    load = evidence.loads["cpu-load"]
    jobs = _jobs(ctx, "cpu-load", count, evidence.per_process, {})
    results = ctx.run(jobs, 1, burn=load.burners)
    _count(found, evidence, "cpu-load", results)
    load.record(_durations(results))


def _throttle_step(
    ctx: PhaseContext, found: PhaseEvidence, evidence: TimingEvidence, share: int
) -> None:
    """Test processes whose process group is stopped for most of every short period."""
    count = share * evidence.processes
    if not count:
        return
    load = evidence.loads["throttle"]
    jobs = _jobs(ctx, "throttle", count, evidence.per_process, {})
    with throttled(load.run_share, period_for(ctx.probe.test_seconds)) as throttle:
        results = ctx.run(jobs, max(1, ctx.options.cores // 2), throttle=throttle)
    _count(found, evidence, "throttle", results)
    load.record(_durations(results))


def _budget_stop(ctx: PhaseContext, looks: int, longest: float) -> str:
    """Why no further round starts, or ``""``: a round must fit in what is left of the budget.

    Checking only that the budget is not spent yet let the last round run past it
    by up to a whole round (13 minutes against 600 s for a test run in fresh
    processes only), so the next round is expected to last as long as the
    longest one so far.
    """
    budget = ctx.options.budget_seconds
    elapsed = ctx.budget.elapsed()
    if elapsed > budget:
        return f"timing: the {budget:g} s budget ended the phase after {looks} rounds"
    if looks and elapsed + longest > budget:
        return (
            f"timing: the {budget:g} s budget ended the phase after {looks} rounds: "
            f"{elapsed:.0f} s had run and a round takes up to {longest:.0f} s, so another "
            "would not fit"
        )
    return ""
