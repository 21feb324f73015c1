"""Causes outside timing: a pytest-randomly seed, and the clause every found cause shares.

Seed: sweep seeds, then require a failing seed to fail every confirmation run
and a passing seed to pass every one. It runs the test once per process, as
the order phases do (``order`` for a polluter, ``brittle`` for a state-setter),
so a test that leaks state into itself is judged on its first runs only; a
found cause is the verdict, with any non-idempotence noted.
"""

from __future__ import annotations

from typing import Optional

from flakewarden.model.verdicts import SEED_DEPENDENT
from flakewarden.stress import stats
from flakewarden.stress.runs import Job, Runner
from flakewarden.stress.verdict import Arm, Verdict

SEEDS_TO_SWEEP = 20
SEED_CONFIRM_PROCESSES = 8  # fresh processes per confirmed seed, one run each


def also_non_idempotent(stress: Runner) -> str:
    """The clause a found cause's reason gets when the test also leaks state into itself."""
    evidence = stress.non_idempotent
    if not evidence:
        return ""
    return (
        f"; it is also non-idempotent (failed {evidence['repeat_failures']}/"
        f"{evidence['repeat_runs']} in-process repeats after passing its first run)"
    )


def _seed_jobs(stress: Runner, seed: int, processes: int) -> list[Job]:
    args = ["-p", "randomly", f"--randomly-seed={seed}"]
    return [Job("seed", str(seed), [stress.options.test_id], 1, args) for _ in range(processes)]


def seed_phase(stress: Runner) -> Optional[Verdict]:
    stress.say(f"seed: sweeping {SEEDS_TO_SWEEP} pytest-randomly seeds")
    seeds = list(range(1, SEEDS_TO_SWEEP + 1))
    jobs = [job for seed in seeds for job in _seed_jobs(stress, seed, 1)]
    sweep = Arm("seed", "sweep")
    results = stress.run_jobs(jobs, stress.options.cores)
    stress.tally(sweep, results)
    stress.arms.append(sweep)
    failing = [
        seed
        for seed, result in zip(seeds, results)
        if result.died or any(r.outcome.is_failure for r in result.records)
    ]
    passing = [s for s in seeds if s not in failing]
    detail: dict[str, object] = {"seeds_tried": seeds, "failing_seeds": failing}
    if not failing or not passing:
        stress.notes.append(
            f"seed: {len(failing)} of {len(seeds)} seeds failed; "
            + ("no seed to confirm" if not failing else "every seed failed")
        )
        return None
    bad, good = failing[0], passing[0]
    stress.say(f"seed: confirming seed {bad} (failed) against seed {good} (passed)")
    bad_arm = Arm(
        "seed",
        f"seed={bad}",
        command=stress.reproduce([stress.options.test_id], seed=bad),
    )
    good_arm = Arm(
        "seed",
        f"seed={good}",
        command=stress.reproduce([stress.options.test_id], seed=good),
    )
    confirm = stress.run_jobs(
        [
            *_seed_jobs(stress, bad, SEED_CONFIRM_PROCESSES),
            *_seed_jobs(stress, good, SEED_CONFIRM_PROCESSES),
        ],
        stress.options.cores,
    )
    stress.tally(bad_arm, confirm[:SEED_CONFIRM_PROCESSES])
    stress.tally(good_arm, confirm[SEED_CONFIRM_PROCESSES:])
    stress.arms.extend([bad_arm, good_arm])
    p = stats.fisher_greater(good_arm.failures, good_arm.runs, bad_arm.failures, bad_arm.runs)
    bad_arm.p_value = p
    detail["confirm"] = {
        "failing_seed": bad_arm.to_json(),
        "passing_seed": good_arm.to_json(),
        "p_value": p,
    }
    if (
        bad_arm.runs
        and bad_arm.failures == bad_arm.runs
        and good_arm.failures == 0
        and p < stats.ALPHA
    ):
        return stress.verdict(
            SEED_DEPENDENT,
            f"failed under {len(failing)} of {len(seeds)} pytest-randomly seeds; seed {bad} "
            f"failed {bad_arm.failures}/{bad_arm.runs} runs in fresh processes and seed "
            f"{good} passed all {good_arm.runs}" + also_non_idempotent(stress),
            "seed-dependent: a failing seed failed every confirmation run and a passing "
            f"seed passed every one (one-sided Fisher p = {p:.3g} < {stats.ALPHA})",
            seed=bad,
            seeds=detail,
        )
    stress.notes.append(
        f"seed: seed {bad} failed {bad_arm.failures}/{bad_arm.runs} and seed {good} failed "
        f"{good_arm.failures}/{good_arm.runs} on confirmation: "
        "the seed does not decide the outcome"
    )
    return None
