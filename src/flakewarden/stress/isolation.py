"""Isolation: fresh processes in a fixed order and seed, in-process repeats, and a real break.

Ten fresh processes run the test once each. A few more repeat it in-process:
a test that passes its first run and fails its repeats significantly more
often leaks state into itself (non-idempotent). When every first run failed
but a repeat passed, more fresh processes decide whether it always fails. A
test that always fails is a real break (``deterministic``) unless a recorded
pass of it shows it brittle (``brittle``). The decisions are pure functions of
the arms' counts, so a table can check them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Optional

from flakewarden.model.verdicts import DETERMINISTIC
from flakewarden.stress import stats
from flakewarden.stress.brittle import brittle_check
from flakewarden.stress.knobs import Concurrency
from flakewarden.stress.phase import Facts, Finding, PhaseContext, PhaseEvidence, PhaseResult
from flakewarden.stress.runs import NO_RANDOMLY, Job, JobResult
from flakewarden.stress.verdict import Arm

ISOLATION_PROCESSES = 10  # fresh processes, one run each
REPEAT_PROCESSES = 2  # then processes that repeat the test in-process
REPEAT_RUNS = 5
# When every first run fails but an in-process repeat passes: 0.85 ** 30 < 1%.
EXTRA_FRESH_PROCESSES = 20


def always_fails(arm: Arm) -> bool:
    """Every run of the arm failed (and it has runs)."""
    return bool(arm.runs) and arm.failures == arm.runs


def _fresh_runs(
    ctx: PhaseContext, found: PhaseEvidence, arm: Arm, count: int
) -> tuple[Arm, Sequence[JobResult]]:
    ctx.say(f"isolation: {count} fresh processes x 1 run")
    jobs = [Job("isolation", "baseline", [ctx.test_id], 1, NO_RANDOMLY) for _ in range(count)]
    # Half the cores at most, like the timing phase's baseline: a timing-sensitive
    # test must not look broken because its own isolation runs crowded the machine.
    results = ctx.run(jobs, max(1, ctx.options.cores // 2))
    return found.tally(arm, results), results


def _seen(facts: Facts, results: Sequence[JobResult]) -> Concurrency:
    """The threads and event loops of these runs, added to what earlier runs showed."""
    return facts.concurrency.add(r for result in results for r in result.records)


def isolation_phase(ctx: PhaseContext) -> PhaseResult:
    """One run in each of ``ISOLATION_PROCESSES`` fresh processes, fixed order and seed."""
    found = PhaseEvidence(ctx)
    arm = Arm("isolation", "baseline", command=ctx.reproduce([ctx.test_id]))
    found.arms.append(arm)
    arm, results = _fresh_runs(ctx, found, arm, ISOLATION_PROCESSES)
    facts = dataclasses.replace(
        ctx.facts,
        isolation=arm,
        always_fails=always_fails(arm),
        concurrency=_seen(ctx.facts, results),
    )
    return found.result(facts=facts)


def processes_that_leaked(results: Sequence[JobResult]) -> int:
    """Processes that passed their first run and then failed (or died in) a repeat."""
    return sum(
        1
        for result in results
        if any(r.iteration == 0 and not r.outcome.is_failure for r in result.records)
        and (result.died or any(r.iteration > 0 and r.outcome.is_failure for r in result.records))
    )


def repeats_p_value(isolation: Arm, in_process: Arm) -> float:
    """p of the in-process repeats failing more often than first runs (one-sided Fisher)."""
    first_runs = isolation.first_runs + in_process.first_runs
    first_failures = isolation.first_failures + in_process.first_failures
    return stats.fisher_greater(
        first_failures, first_runs, in_process.repeat_failures, in_process.repeat_runs
    )


def non_idempotence(isolation: Arm, in_process: Arm, leaked: int) -> dict[str, object]:
    """The repetition evidence when the test leaks state into itself, else ``{}``.

    Non-idempotent: the repeats fail significantly more often than the first
    runs of fresh processes (one-sided Fisher, p < alpha, ``in_process.p_value``) and
    some process passed its first run and then failed a repeat.
    """
    first_runs = isolation.first_runs + in_process.first_runs
    first_failures = isolation.first_failures + in_process.first_failures
    p = repeats_p_value(isolation, in_process)
    if not (p < stats.ALPHA and leaked):
        return {}
    return {
        "first_runs": first_runs,
        "first_failures": first_failures,
        "repeat_runs": in_process.repeat_runs,
        "repeat_failures": in_process.repeat_failures,
        "processes_passed_first_then_failed": leaked,
        "p_value": p,
        "rule": "one-sided Fisher exact test of in-process repeats against first runs "
        f"in a process, p = {p:.3g} < {stats.ALPHA}",
    }


def non_idempotent_note(isolation: Arm, in_process: Arm) -> str:
    first_runs = isolation.first_runs + in_process.first_runs
    first_failures = isolation.first_failures + in_process.first_failures
    return (
        f"non-idempotent: it passed {first_runs - first_failures}/{first_runs} first runs "
        f"in a process but failed {in_process.repeat_failures}/{in_process.repeat_runs} "
        f"in-process repeats (p = {in_process.p_value:.3g}): it leaks state into itself, so "
        "every later process runs it once"
    )


def needs_more_fresh_runs(fails_so_far: bool, in_process: Arm) -> bool:
    """Every first run failed, yet a repeat in the same process passed.

    The failure then hangs on a fresh process's state (a cold start, a cache
    the first run builds), and ten failing first runs cannot tell "always"
    from "85% of the time": more fresh runs decide before a flake is called a break.
    """
    return fails_so_far and in_process.repeat_runs > in_process.repeat_failures


def repeats_phase(ctx: PhaseContext) -> PhaseResult:
    """Repeat the test in-process; record whether it leaks state into itself."""
    isolation = ctx.facts.isolation
    assert isolation is not None
    found = PhaseEvidence(ctx)
    ctx.say(f"isolation: {REPEAT_PROCESSES} processes x {REPEAT_RUNS} in-process repeats")
    arm = Arm("isolation", "in-process", repeat=REPEAT_RUNS, command=ctx.reproduce([ctx.test_id]))
    job = Job("isolation", "in-process", [ctx.test_id], REPEAT_RUNS, NO_RANDOMLY)
    results = ctx.run([job] * REPEAT_PROCESSES, max(1, ctx.options.cores // 2))
    found.arms.append(arm)
    arm = found.tally(arm, results)
    arm = found.replace(arm, dataclasses.replace(arm, p_value=repeats_p_value(isolation, arm)))
    leaks = non_idempotence(isolation, arm, processes_that_leaked(results))
    if leaks:
        found.note(non_idempotent_note(isolation, arm))
    facts = dataclasses.replace(
        ctx.facts,
        in_process=arm,
        non_idempotent=leaks or {},
        concurrency=_seen(ctx.facts, results),
    )
    if needs_more_fresh_runs(ctx.facts.always_fails, arm):
        found.note(
            f"every one of the first {isolation.runs} runs in a fresh process failed, "
            f"but {arm.repeat_runs - arm.repeat_failures} of {arm.repeat_runs} in-process "
            f"repeats passed: {EXTRA_FRESH_PROCESSES} more fresh processes decide whether it "
            "always fails"
        )
        # The isolation arm grows by these runs: a new value, the earlier phase's stays as it was.
        grown, more = _fresh_runs(ctx, found, isolation, EXTRA_FRESH_PROCESSES)
        facts = dataclasses.replace(
            facts,
            isolation=grown,
            always_fails=always_fails(grown),
            concurrency=_seen(facts, more),
        )
    return found.result(facts=facts)


def deterministic_finding(
    isolation: Arm,
    in_process: Arm,
    *,
    swept: bool,
    clause: str = "",
    order: Optional[Mapping[str, object]] = None,
) -> Finding:
    """A real break: every first run in a fresh process failed, in a fixed order and seed."""
    passed_repeats = in_process.repeat_runs - in_process.repeat_failures
    return Finding(
        DETERMINISTIC,
        f"failed all {isolation.runs} of its first runs in {isolation.processes} fresh "
        "processes, in a fixed order and seed: a real break, not a flake"
        + ("; every pytest-randomly seed tried failed too" if swept else "")
        + (
            f" (it fails every time a fresh process runs it, as CI does, although "
            f"{passed_repeats} of {in_process.repeat_runs} in-process repeats passed)"
            if passed_repeats
            else f"; all {in_process.repeat_runs} in-process repeats failed too"
        )
        + clause,
        f"deterministic: every one of the first {isolation.runs} isolated runs, "
        "one per fresh process, failed",
        order=dict(order or {}),
    )


def break_phase(ctx: PhaseContext) -> PhaseResult:
    """A test that always fails: brittle when a recorded pass says so, else a real break."""
    facts = ctx.facts
    assert facts.isolation is not None and facts.in_process is not None
    found = PhaseEvidence(ctx)
    # A recorded pass weighs against a real break: the test may be brittle.
    brittle = brittle_check(ctx, found)
    if brittle.finding is not None:
        return found.result(brittle.finding)
    finding = deterministic_finding(
        facts.isolation,
        facts.in_process,
        swept=facts.swept,
        clause=brittle.clause,
        order=brittle.order,
    )
    return found.result(finding)
