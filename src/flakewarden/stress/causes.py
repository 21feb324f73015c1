"""Causes outside timing: a polluting predecessor (order) and a pytest-randomly seed.

Order: replay the predecessors from the recorded run order, bisect to the
polluter, and confirm the pair against isolation with a one-sided Fisher test.
Seed: sweep seeds, then require a failing seed to fail every confirmation run
and a passing seed to pass every one. Both run the test once per process, so a
test that leaks state into itself is judged on its first runs only; a found
cause is the verdict, with any non-idempotence noted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional

from flakewarden.errors import ReportError, UsageError
from flakewarden.reports.report_json import read_report
from flakewarden.stress import stats
from flakewarden.stress.runs import NO_RANDOMLY, Job, Runner
from flakewarden.stress.verdict import ORDER_DEPENDENT, SEED_DEPENDENT, Arm, Verdict

SEEDS_TO_SWEEP = 20
SEED_CONFIRM_PROCESSES = 8  # fresh processes per confirmed seed, one run each
ORDER_REPLAYS = 2
ORDER_CONFIRM = 5


def also_non_idempotent(stress: Runner) -> str:
    """The clause a found cause's reason gets when the test also leaks state into itself."""
    evidence = stress.non_idempotent
    if not evidence:
        return ""
    return (
        f"; it is also non-idempotent (failed {evidence['repeat_failures']}/"
        f"{evidence['repeat_runs']} in-process repeats after passing its first run)"
    )


def order_phase(stress: Runner) -> Optional[Verdict]:
    assert stress.options.order_from is not None
    test_id = stress.options.test_id
    try:
        report = read_report(stress.options.order_from)
    except ReportError as exc:
        raise UsageError(f"--order-from: {exc}") from None
    if test_id not in report.order:
        stress.notes.append(
            f"order: {test_id} is not in the run order of {stress.options.order_from}"
        )
        return None
    before = report.order[: report.order.index(test_id)]
    detail: dict[str, object] = {
        "source": str(stress.options.order_from),
        "predecessors": len(before),
    }
    if not before:
        stress.notes.append(
            "order: the test ran first in its recorded run; no predecessor to blame"
        )
        return None
    stress.say(f"order: replaying {len(before)} predecessors in the recorded order")
    replay = Arm("order", "after-predecessors", command=stress.reproduce([*before, test_id]))
    stress.arms.append(replay)
    if not _fails_after(stress, before, replay, ORDER_REPLAYS + 1):
        detail["reproduced"] = False
        stress.notes.append(
            f"order: replaying the {len(before)} predecessors in order did not reproduce "
            f"({replay.failures}/{replay.runs})"
        )
        return None
    candidates = list(before)
    steps: list[dict[str, object]] = []
    while len(candidates) > 1 and not stress.over_budget():
        half = len(candidates) // 2
        first, second = candidates[:half], candidates[half:]
        probe_arm = Arm("order", "bisect")
        if _fails_after(stress, first, probe_arm, ORDER_REPLAYS):
            candidates = first
        elif _fails_after(stress, second, probe_arm, ORDER_REPLAYS):
            candidates = second
        else:
            steps.append({"tried": len(first) + len(second), "result": "needs both halves"})
            break
        steps.append(
            {"kept": len(candidates), "runs": probe_arm.runs, "failures": probe_arm.failures}
        )
    detail["bisection"] = steps
    polluter = " + ".join(candidates)
    confirm = Arm("order", "after-polluter", command=stress.reproduce([*candidates, test_id]))
    stress.arms.append(confirm)
    _fails_after(stress, candidates, confirm, ORDER_CONFIRM)
    isolation = next(a for a in stress.arms if a.phase == "isolation")
    p = stats.fisher_greater(isolation.failures, isolation.runs, confirm.failures, confirm.runs)
    confirm.p_value = p
    detail["polluters"] = candidates
    detail["confirm"] = {"runs": confirm.runs, "failures": confirm.failures, "p_value": p}
    if p < stats.ALPHA:
        return stress.verdict(
            ORDER_DEPENDENT,
            f"passes alone ({isolation.failures}/{isolation.runs} failures) but failed "
            f"{confirm.failures}/{confirm.runs} times right after {polluter}"
            + also_non_idempotent(stress),
            "order-dependent: one-sided Fisher exact test of failures right after the "
            f"polluter against isolation, p = {p:.3g} < {stats.ALPHA}",
            polluter=polluter,
            order=detail,
        )
    stress.notes.append(
        f"order: bisection ended at {polluter} but it did not confirm (p = {p:.3g})"
    )
    return None


def _fails_after(stress: Runner, before: Sequence[str], arm: Arm, processes: int) -> bool:
    ids = [*before, stress.options.test_id]
    job = Job("order", arm.knob, ids, 1, NO_RANDOMLY, ordered=True)
    results = stress.run_jobs([job] * processes, stress.options.cores)
    failures = arm.failures
    stress.tally(arm, results)
    return arm.failures > failures


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
