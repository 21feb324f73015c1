"""The timing phase: interleaved rounds of baseline and tightening knobs, stopped sequentially.

Every round runs each arm once in a fresh process (baseline, switch interval
1e-5, CPU burners at 1x and 2x the cores), rotating their order so that drift
in the machine's load hits every arm alike. After each round each knob is
compared with the baseline (``stats.SequentialPlan``).

A test that leaks state into itself (``Runner.non_idempotent``) is never
repeated in-process here: each round runs the same number of runs per arm, as
that many fresh processes of one run each.
"""

from __future__ import annotations

import math
from typing import Callable

from flakewarden.stress import stats
from flakewarden.stress.causes import also_non_idempotent
from flakewarden.stress.runs import NO_RANDOMLY, SWITCH_INTERVAL, Job, Runner
from flakewarden.stress.verdict import (
    FLAKY,
    KNOB_DESCRIPTIONS,
    NON_IDEMPOTENT,
    NOT_REPRODUCIBLE,
    RACE,
    Arm,
    Verdict,
)

MAX_REPEAT = 20
MIN_REPEAT = 5
TARGET_PROCESS_SECONDS = 2.0


def timing_phase(stress: Runner, isolation: Arm) -> Verdict:
    options = stress.options
    repeat = int(min(MAX_REPEAT, max(MIN_REPEAT, TARGET_PROCESS_SECONDS / stress.test_seconds)))
    repeat = min(repeat, max(1, options.runs))
    rounds = max(1, math.ceil(options.runs / repeat))
    # Runs per round per arm stay ``repeat``; a non-idempotent test gets them from as
    # many fresh processes of one run each.
    fresh_only = bool(stress.non_idempotent)
    per_process, processes = (1, repeat) if fresh_only else (repeat, 1)
    plan = stats.SequentialPlan(looks=rounds)
    test_id = [options.test_id]
    knobs = ["switch-interval", "burn-1x", "burn-2x"]
    arms = {
        name: Arm("timing", name, repeat=per_process, command=stress.reproduce(test_id, knob=name))
        for name in ["baseline", *knobs]
    }
    stress.arms.extend(arms.values())
    cores = options.cores
    steps: list[tuple[str, Callable[[], None]]] = [
        ("unloaded", lambda: _unloaded_step(stress, arms, per_process, processes)),
        ("burn-1x", lambda: _burn_step(stress, arms["burn-1x"], per_process, processes, cores)),
        (
            "burn-2x",
            lambda: _burn_step(stress, arms["burn-2x"], per_process, processes, 2 * cores),
        ),
    ]
    significant: list[str] = []
    looks = 0
    stress.say(
        f"timing: up to {rounds} interleaved rounds of {repeat} runs per knob"
        + (" (fresh processes only: the test is non-idempotent)" if fresh_only else "")
    )
    longest = 0.0  # the longest round so far: what the next one is expected to take
    for round_number in range(rounds):
        stop = _budget_stop(stress, looks, longest)
        if stop:
            stress.notes.append(stop)
            break
        started = stress.elapsed()
        shift = round_number % len(steps)
        for _, step in steps[shift:] + steps[:shift]:
            step()
        looks += 1
        longest = max(longest, stress.elapsed() - started)
        base = arms["baseline"]
        raw = {
            k: stats.fisher_greater(base.failures, base.runs, arms[k].failures, arms[k].runs)
            for k in knobs
        }
        adjusted = stats.holm(raw)
        for k in knobs:
            arms[k].p_value, arms[k].p_adjusted = raw[k], adjusted[k]
        significant = plan.significant(adjusted)
        if significant:
            break
    statistics: dict[str, object] = {
        "test": "one-sided Fisher exact test, each knob against the interleaved baseline",
        "multiplicity": f"Holm across {len(knobs)} knobs",
        "sequential_rule": plan.describe(),
        "alpha": plan.alpha,
        "alpha_per_look": plan.alpha_per_look,
        "looks_planned": rounds,
        "looks_taken": looks,
        "runs_per_process": per_process,
        "processes_per_arm_per_round": processes,
        "intervals": "two-sided 95% Clopper-Pearson; upper bounds one-sided 95%",
    }
    if significant:
        knob = significant[0]
        arm, base = arms[knob], arms["baseline"]
        others = [k for k in significant[1:]]
        return stress.verdict(
            RACE,
            f"the failure rate climbs under {knob} ({KNOB_DESCRIPTIONS[knob]}): "
            f"{arm.failures}/{arm.runs} against {base.failures}/{base.runs} at baseline"
            + (f"; also significant: {', '.join(others)}" if others else "")
            + also_non_idempotent(stress),
            f"race: Holm-adjusted one-sided Fisher p = {arm.p_adjusted:.3g} < "
            f"{plan.alpha_per_look:.4g} (alpha {plan.alpha:g} over {rounds} planned looks) "
            f"at look {looks}",
            knob=knob,
            statistics=statistics,
        )
    timing_arms = list(arms.values())
    runs = sum(a.runs for a in stress.arms)
    # A non-idempotent test's in-process repeats fail by its known cause: only first
    # runs in a process speak for any other failure.
    failures = sum(a.first_failures if fresh_only else a.failures for a in stress.arms)
    tried = ", ".join(a.knob for a in timing_arms)
    smallest = min((arms[k].p_adjusted or 1.0 for k in knobs), default=1.0)
    if failures:
        return stress.verdict(
            FLAKY,
            f"failed {failures} of {runs} runs at a flat rate: no knob ({', '.join(knobs)}) "
            f"raised it significantly (smallest Holm-adjusted p = {smallest:.3g})",
            f"flaky: it reproduces, and no knob crossed the sequential threshold "
            f"{plan.alpha_per_look:.4g} in {looks} looks",
            statistics=statistics,
        )
    if fresh_only:
        return _non_idempotent(stress, runs - sum(a.repeat_runs for a in stress.arms), statistics)
    pooled = stats.upper_bound(0, runs)
    per_knob = "; ".join(f"{a.knob} < {100 * a.upper:.2f}% ({a.runs} runs)" for a in timing_arms)
    phases = ["isolation", "timing"]
    if any(a.phase == "order" for a in stress.arms):
        phases.append("order")
    if any(a.phase == "seed" for a in stress.arms):
        phases.append("seed")
    return stress.verdict(
        NOT_REPRODUCIBLE,
        f"no failure in {runs} runs (phases: {', '.join(phases)}; knobs: {tried}); the "
        f"failure rate is below {100 * pooled:.2f}% overall and per knob {per_knob} "
        "(95% one-sided Clopper-Pearson). This is not evidence that it is not a race.",
        "not-reproducible: zero failures under every phase and knob tried",
        statistics=statistics,
    )


def _budget_stop(stress: Runner, looks: int, longest: float) -> str:
    """Why no further round starts, or ``""``: a round must fit in what is left of the budget.

    Checking only that the budget is not spent yet let the last round run past it
    by up to a whole round (13 minutes against 600 s for a test run in fresh
    processes only), so the next round is expected to last as long as the
    longest one so far.
    """
    budget = stress.options.budget_seconds
    elapsed = stress.elapsed()
    if elapsed > budget:
        return f"timing: the {budget:g} s budget ended the phase after {looks} rounds"
    if looks and elapsed + longest > budget:
        return (
            f"timing: the {budget:g} s budget ended the phase after {looks} rounds: "
            f"{elapsed:.0f} s had run and a round takes up to {longest:.0f} s, so another "
            "would not fit"
        )
    return ""


def _non_idempotent(stress: Runner, first_runs: int, statistics: dict[str, object]) -> Verdict:
    evidence = stress.non_idempotent
    return stress.verdict(
        NON_IDEMPOTENT,
        f"it leaks state into itself: it passed all {first_runs} of its first runs in a "
        f"process (isolation, timing knobs in fresh processes"
        + (", order" if any(a.phase == "order" for a in stress.arms) else "")
        + (", seeds" if any(a.phase == "seed" for a in stress.arms) else "")
        + f") but failed {evidence['repeat_failures']}/{evidence['repeat_runs']} in-process "
        "repeats; no order, seed or timing cause was found",
        f"non-idempotent: {evidence['rule']}, and no first run in a process failed",
        statistics=statistics,
    )


def _unloaded_step(stress: Runner, arms: dict[str, Arm], repeat: int, processes: int) -> None:
    """Baseline and switch-interval processes, leaving half the cores idle.

    Running more at once would load the machine and raise the baseline's
    rate for exactly the timing-sensitive tests the burners are meant to
    expose, so the unloaded arms only use up to half of the cores.
    """
    per_arm = max(1, stress.options.cores // 4) * processes
    test_id = [stress.options.test_id]
    jobs = [Job("timing", "baseline", test_id, repeat, NO_RANDOMLY) for _ in range(per_arm)]
    jobs += [
        Job(
            "timing",
            "switch-interval",
            test_id,
            repeat,
            NO_RANDOMLY,
            {"FLAKEWARDEN_SWITCH_INTERVAL": SWITCH_INTERVAL},
        )
        for _ in range(per_arm)
    ]
    results = stress.run_jobs(jobs, max(1, stress.options.cores // 2))
    stress.tally(arms["baseline"], results[:per_arm])
    stress.tally(arms["switch-interval"], results[per_arm:])


def _burn_step(stress: Runner, arm: Arm, repeat: int, processes: int, count: int) -> None:
    """``processes`` test processes, one at a time, while ``count`` burners hold the cores."""
    job = Job("timing", arm.knob, [stress.options.test_id], repeat, NO_RANDOMLY)
    stress.tally(arm, stress.run_jobs([job] * processes, 1, burn=count))
