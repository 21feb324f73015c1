"""The seed phase: a cause outside timing, a pytest-randomly seed.

Sweep seeds, then require a failing seed to fail every confirmation run
and a passing seed to pass every one. It runs the test once per process, as
the order phases do (``order`` for a polluter, ``brittle`` for a state-setter),
so a test that leaks state into itself is judged on its first runs only; a
found cause is the verdict, with any non-idempotence noted.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

from flakewarden.model.verdicts import SEED_DEPENDENT
from flakewarden.stress import stats
from flakewarden.stress.phase import (
    Finding,
    PhaseContext,
    PhaseEvidence,
    PhaseResult,
    also_non_idempotent,
)
from flakewarden.stress.runs import Job
from flakewarden.stress.verdict import Arm

SEEDS_TO_SWEEP = 20
SEED_CONFIRM_PROCESSES = 8  # fresh processes per confirmed seed, one run each


def _seed_jobs(test_id: str, seed: int, processes: int) -> list[Job]:
    args = ["-p", "randomly", f"--randomly-seed={seed}"]
    return [Job("seed", str(seed), [test_id], 1, args) for _ in range(processes)]


def seed_first_applies(ctx: PhaseContext) -> bool:
    """Every fresh run failed with pytest-randomly off: does some seed make it pass?

    Without pytest-randomly the random state is one more fixed seed: a test that
    some seed makes pass is seed-dependent, or at least not a real break.
    """
    return ctx.probe.randomly and ctx.facts.always_fails and not ctx.facts.swept


def seed_applies(ctx: PhaseContext) -> bool:
    """pytest-randomly is in use and no seed was swept yet."""
    return ctx.probe.randomly and not ctx.facts.swept


def seed_phase(ctx: PhaseContext) -> PhaseResult:
    """Sweep seeds; confirm a failing seed against a passing one in fresh processes."""
    found = PhaseEvidence(ctx)
    ctx.say(f"seed: sweeping {SEEDS_TO_SWEEP} pytest-randomly seeds")
    seeds = list(range(1, SEEDS_TO_SWEEP + 1))
    jobs = [job for seed in seeds for job in _seed_jobs(ctx.test_id, seed, 1)]
    sweep = Arm("seed", "sweep")
    results = ctx.run(jobs, ctx.options.cores)
    found.arms.append(sweep)
    sweep = found.tally(sweep, results)
    # A sweep in which some seed passed is no longer evidence of a real break.
    facts = dataclasses.replace(
        ctx.facts, swept=True, always_fails=ctx.facts.always_fails and sweep.failures == sweep.runs
    )
    failing = [
        seed
        for seed, result in zip(seeds, results)
        if result.died or any(r.outcome.is_failure for r in result.records)
    ]
    passing = [s for s in seeds if s not in failing]
    if not failing or not passing:
        found.note(
            f"seed: {len(failing)} of {len(seeds)} seeds failed; "
            + ("no seed to confirm" if not failing else "every seed failed")
        )
        return found.result(facts=facts)
    finding = _confirm(ctx, found, seeds, failing, passing[0])
    return found.result(finding, facts)


def _confirm(
    ctx: PhaseContext, found: PhaseEvidence, seeds: list[int], failing: list[int], good: int
) -> Optional[Finding]:
    """A failing seed must fail every confirmation run and a passing seed pass every one."""
    bad = failing[0]
    ctx.say(f"seed: confirming seed {bad} (failed) against seed {good} (passed)")
    bad_arm = Arm("seed", f"seed={bad}", command=ctx.reproduce([ctx.test_id], seed=bad))
    good_arm = Arm("seed", f"seed={good}", command=ctx.reproduce([ctx.test_id], seed=good))
    confirm = ctx.run(
        [
            *_seed_jobs(ctx.test_id, bad, SEED_CONFIRM_PROCESSES),
            *_seed_jobs(ctx.test_id, good, SEED_CONFIRM_PROCESSES),
        ],
        ctx.options.cores,
    )
    found.arms.extend([bad_arm, good_arm])
    bad_arm = found.tally(bad_arm, confirm[:SEED_CONFIRM_PROCESSES])
    good_arm = found.tally(good_arm, confirm[SEED_CONFIRM_PROCESSES:])
    p = stats.fisher_greater(good_arm.failures, good_arm.runs, bad_arm.failures, bad_arm.runs)
    bad_arm = found.replace(bad_arm, dataclasses.replace(bad_arm, p_value=p))
    detail: dict[str, object] = {
        "seeds_tried": seeds,
        "failing_seeds": failing,
        "confirm": {
            "failing_seed": bad_arm.to_json(),
            "passing_seed": good_arm.to_json(),
            "p_value": p,
        },
    }
    if (
        bad_arm.runs
        and bad_arm.failures == bad_arm.runs
        and good_arm.failures == 0
        and p < stats.ALPHA
    ):
        return Finding(
            SEED_DEPENDENT,
            f"failed under {len(failing)} of {len(seeds)} pytest-randomly seeds; seed {bad} "
            f"failed {bad_arm.failures}/{bad_arm.runs} runs in fresh processes and seed "
            f"{good} passed all {good_arm.runs}" + also_non_idempotent(ctx.facts.non_idempotent),
            "seed-dependent: a failing seed failed every confirmation run and a passing "
            f"seed passed every one (one-sided Fisher p = {p:.3g} < {stats.ALPHA})",
            seed=bad,
            seeds=detail,
        )
    found.note(
        f"seed: seed {bad} failed {bad_arm.failures}/{bad_arm.runs} and seed {good} failed "
        f"{good_arm.failures}/{good_arm.runs} on confirmation: "
        "the seed does not decide the outcome"
    )
    return None
