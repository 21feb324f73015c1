"""The draws phase: failures that follow the random seed or the hash seed a process drew.

Every stress process runs under seeds the engine chose and recorded with each
run: the random seed the plugin gives ``random`` and every generator it controls
(``inside/plugin/seeds.py``), and ``PYTHONHASHSEED``, which fixes the order a
``set`` or a str-keyed ``dict`` iterates in (``forkserver``, ``pool``). A failing
run's pair of seeds and a passing run's pair are each replayed in fresh
processes; when the failing pair fails every time and the passing pair passes
every time, the seeds decide the outcome (``seed-dependent``). Two more replays
swap the seeds to name which one: the random seed with the passing hash seed,
the hash seed with the passing random seed.

When every run so far failed (the isolation arm ran from one fork server, under
one hash seed), a few processes with hash seeds of their own first decide
whether a hash seed passes; only then is a test that always failed called a
real break. The phase runs before the timing phase when the fresh runs already
hold a failure and a pass, and otherwise after it, as a refinement of its
finding (``deterministic``, ``flaky`` or ``inconclusive``).
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence
from typing import Optional

from flakewarden.model.verdicts import (
    DETERMINISTIC,
    FLAKY,
    INCONCLUSIVE,
    NOT_REPRODUCIBLE,
    SEED_DEPENDENT,
)
from flakewarden.runner.fork_process import HASH_SEED, draw_hash_seed
from flakewarden.stress import stats
from flakewarden.stress.arm import Arm, Sample
from flakewarden.stress.isolation import always_fails
from flakewarden.stress.knobs import RANDOM_SEED_VARIABLE
from flakewarden.stress.phase import (
    Finding,
    PhaseContext,
    PhaseEvidence,
    PhaseResult,
    also_non_idempotent,
)
from flakewarden.stress.runs import NO_RANDOMLY, Job

CONFIRM_PROCESSES = 5  # fresh processes per replayed pair of seeds: p = 1/252 for 5 against 5
SWEEP_PROCESSES = 8  # processes with hash seeds of their own, when every run failed
REFINES = (DETERMINISTIC, FLAKY, INCONCLUSIVE)
# A clean record under fewer hash seeds than the sweep's says little of a set's order.
CLEAN = (NOT_REPRODUCIBLE,)
# Arms whose runs replay as they ran: no knob, a fresh process or its in-process repeats.
REPLAYABLE = {("isolation", "baseline"), ("isolation", "in-process"), ("timing", "baseline")}
#: What each kind of seed dependence is called where a reader meets it.
KINDS = {
    "random": "the random seed (the draws of random, numpy or a library's own generator)",
    "hash": "the hash seed (set or str-keyed dict iteration order)",
    "pair": "the random seed and the hash seed together",
    "either": "the random seed or the hash seed, each alone",
}


def _seeded(arms: Sequence[Arm], firsts: bool = False) -> list[Sample]:
    """Runs that replay from their seeds, first runs before in-process repeats.

    ``firsts``: the first runs of their processes only (a test that leaks state into
    itself fails its repeats whatever the seed).
    """
    runs = [
        s
        for arm in arms
        if (arm.phase, arm.knob) in REPLAYABLE
        for s in arm.samples
        if s.random_seed is not None
        and s.hash_seed is not None
        and not (firsts and s.iteration > 0)
    ]
    return sorted(runs, key=lambda s: s.iteration > 0)


def early_applies(ctx: PhaseContext) -> bool:
    """Before the timing phase: the fresh runs hold a seeded failure and a seeded pass."""
    if ctx.facts.drawn or ctx.facts.always_fails:
        return False
    runs = _seeded(ctx.arms, firsts=True)
    return any(s.failed for s in runs) and any(not s.failed for s in runs)


def refine_applies(ctx: PhaseContext) -> bool:
    """After a finding that a seed could explain, when the phase has not run yet."""
    finding = ctx.finding
    if ctx.facts.drawn or finding is None:
        return False
    runs = _seeded(ctx.arms, bool(ctx.facts.non_idempotent))
    if finding.verdict in CLEAN:
        return len({s.hash_seed for s in runs}) < SWEEP_PROCESSES
    return finding.verdict in REFINES and any(s.failed for s in runs)


#: A run to replay: the process's random seed, its hash seed, and which run of the process.
Seeds = tuple[int, int, int]


def replay_job(ctx: PhaseContext, phase: str, knob: str, seeds: Seeds, **env: str) -> Job:
    """A fresh process that replays a run: its seeds, and the runs before it in its process."""
    random_seed, hash_seed, iteration = seeds
    variables = {RANDOM_SEED_VARIABLE: str(random_seed), HASH_SEED: str(hash_seed), **env}
    return Job(phase, knob, [ctx.test_id], iteration + 1, NO_RANDOMLY, env=variables)


def _replay(ctx: PhaseContext, found: PhaseEvidence, pairs: dict[str, Seeds]) -> dict[str, Arm]:
    """Each named run replayed in ``CONFIRM_PROCESSES`` fresh processes; its run alone counts."""
    jobs = [
        replay_job(ctx, "draws", name, seeds)
        for name, seeds in pairs.items()
        for _ in range(CONFIRM_PROCESSES)
    ]
    results = ctx.run(jobs, ctx.options.cores)
    arms = {}
    for index, (name, seeds) in enumerate(pairs.items()):
        arm = Arm("draws", name, command=_command(ctx, seeds))
        found.arms.append(arm)
        part = results[index * CONFIRM_PROCESSES : (index + 1) * CONFIRM_PROCESSES]
        arms[name] = found.tally(arm, [r.at_iteration(seeds[2]) for r in part])
    return arms


def replay_variables(seeds: Seeds) -> str:
    random_seed, hash_seed, iteration = seeds
    repeat = f" FLAKEWARDEN_REPEAT={iteration + 1}" if iteration else ""
    return f"{HASH_SEED}={hash_seed} {RANDOM_SEED_VARIABLE}={random_seed}{repeat}"


def _command(ctx: PhaseContext, seeds: Seeds) -> str:
    return ctx.reproduce([ctx.test_id], replay=replay_variables(seeds))


def _all_pass(arm: Arm) -> bool:
    return bool(arm.runs) and arm.failures == 0


def _sweep(ctx: PhaseContext, found: PhaseEvidence, seen: int) -> list[Sample]:
    """Every run failed, or none did: processes with hash seeds (and random seeds) of their own,
    enough for ``SWEEP_PROCESSES`` hash seeds in all (each is spawned: a new interpreter)."""
    count = max(2, SWEEP_PROCESSES - seen)
    ctx.say(f"draws: {count} processes with hash seeds of their own")
    draw = random.SystemRandom()
    jobs = [
        replay_job(ctx, "draws", "hash-sweep", (draw.randrange(1, 2**31), draw_hash_seed(), 0))
        for _ in range(count)
    ]
    arm = Arm("draws", "hash-sweep")
    found.arms.append(arm)
    arm = found.tally(arm, ctx.run(jobs, ctx.options.cores))
    return list(arm.samples)


def draws_phase(ctx: PhaseContext) -> PhaseResult:
    """Replay a failing and a passing pair of seeds; swap them to name the seed that decides."""
    found = PhaseEvidence(ctx)
    facts = dataclasses.replace(ctx.facts, drawn=True)
    runs = _seeded(ctx.arms, bool(ctx.facts.non_idempotent))
    one_sided = all(s.failed for s in runs) or not any(s.failed for s in runs)
    if one_sided and len({s.hash_seed for s in runs}) < SWEEP_PROCESSES:
        if ctx.budget.spent():
            found.note("draws: the budget was spent before hash seeds of its own were tried")
            return found.result(facts=facts)
        runs += _sweep(ctx, found, len({s.hash_seed for s in runs}))
    failing = next(
        (
            s
            for s in runs
            if s.failed
            and s.random_seed is not None
            and any(not o.failed and o.iteration == s.iteration for o in runs)
        ),
        next((s for s in runs if s.failed and s.random_seed is not None), None),
    )
    passing = _passing_for(failing, runs)
    if failing is None or passing is None:
        hashes = len({s.hash_seed for s in runs})
        randoms = len({s.random_seed for s in runs})
        clause = f"under {randoms} random seeds and {hashes} hash seeds"
        if failing is None:
            found.note(f"draws: no run failed, {clause}")
            if ctx.finding is not None and ctx.finding.verdict == NOT_REPRODUCIBLE:
                reason = f"{ctx.finding.reason.rstrip('.')}; it passed {clause}"
                return found.result(dataclasses.replace(ctx.finding, reason=reason), facts)
            return found.result(facts=facts)
        found.note(f"draws: every run failed, {clause}: no seed makes it pass")
        if ctx.finding is not None and ctx.finding.verdict == DETERMINISTIC:
            # The fresh runs differed in everything a new interpreter draws: the claim holds.
            reason = f"{ctx.finding.reason.rstrip('.')}; it failed {clause}"
            return found.result(dataclasses.replace(ctx.finding, reason=reason), facts)
        return found.result(facts=facts)
    assert failing.random_seed is not None and failing.hash_seed is not None
    assert passing.random_seed is not None and passing.hash_seed is not None
    bad = (failing.random_seed, failing.hash_seed, failing.iteration)
    good = (passing.random_seed, passing.hash_seed, passing.iteration)
    ctx.say(f"draws: replaying a failing and a passing pair of seeds ({bad} against {good})")
    arms = _replay(ctx, found, {"failing-seeds": bad, "passing-seeds": good})
    p = stats.fisher_greater(
        arms["passing-seeds"].failures,
        arms["passing-seeds"].runs,
        arms["failing-seeds"].failures,
        arms["failing-seeds"].runs,
    )
    decided = always_fails(arms["failing-seeds"]) and _all_pass(arms["passing-seeds"])
    if not (decided and p < stats.ALPHA):
        said = (
            f"the failing seeds failed {arms['failing-seeds'].failures}/"
            f"{arms['failing-seeds'].runs} replays and the passing seeds "
            f"{arms['passing-seeds'].failures}/{arms['passing-seeds'].runs}: "
            "the seeds do not decide the outcome"
        )
        found.note(f"draws: {said}")
        if ctx.finding is not None and ctx.finding.verdict == NOT_REPRODUCIBLE:
            return found.result(_unexplained(ctx.finding, said), facts)
        return found.result(facts=facts)
    kind = "random"
    if bad[1] != good[1]:
        ctx.say("draws: swapping the seeds to name the one that decides")
        swaps = {"random-seed": (bad[0], good[1], bad[2]), "hash-seed": (good[0], bad[1], good[2])}
        arms.update(_replay(ctx, found, swaps))
        kind = _kind(arms["random-seed"], arms["hash-seed"])
    return found.result(_finding(ctx, kind, bad, good, arms, p), facts)


def _unexplained(clean: Finding, said: str) -> Finding:
    """A clean finding that the hash-seed sweep saw fail: no longer clean, and unexplained."""
    return Finding(
        INCONCLUSIVE,
        "no phase reproduced a failure, but a process with a hash seed of its own failed it "
        f"and {said}: a failure no rule explains; stress it again with a larger budget",
        "inconclusive: a failure outside the phases' runs, which no seed replays",
        power=clean.power,
        load=clean.load,
    )


def _passing_for(failing: Optional[Sample], runs: Sequence[Sample]) -> Optional[Sample]:
    """A passing run at the same place in its process, under another hash seed if there is one.

    The same place: a first run passes where a repeat fails when the test leaks state into
    itself or runs cold, whatever the seeds.
    """
    passes = [
        s
        for s in runs
        if not s.failed
        and s.random_seed is not None
        and failing is not None
        and s.iteration == failing.iteration
    ]
    if failing is None or not passes:
        return None
    other = [s for s in passes if s.hash_seed != failing.hash_seed]
    return (other or passes)[0]


def _kind(random_arm: Arm, hash_arm: Arm) -> str:
    """Which seed carries the failure, from the two swapped replays."""
    if always_fails(random_arm) and _all_pass(hash_arm):
        return "random"
    if _all_pass(random_arm) and always_fails(hash_arm):
        return "hash"
    if always_fails(random_arm) and always_fails(hash_arm):
        return "either"
    return "pair"


def _finding(
    ctx: PhaseContext,
    kind: str,
    bad: Seeds,
    good: Seeds,
    arms: dict[str, Arm],
    p: float,
) -> Finding:
    failing, passing = arms["failing-seeds"], arms["passing-seeds"]
    if kind == "hash":
        named = f"{HASH_SEED}={bad[1]} failed {failing.runs}/{failing.runs} fresh processes and "
        named += (
            f"{HASH_SEED}={good[1]} passed {passing.runs}/{passing.runs}, whatever the random seed"
        )
    elif kind == "random":
        named = f"random seed {bad[0]} failed {failing.runs}/{failing.runs} fresh processes and "
        named += f"random seed {good[0]} passed {passing.runs}/{passing.runs}"
        named += ", whatever the hash seed" if bad[1] != good[1] else ""
    else:
        named = (
            f"the seeds (random {bad[0]}, {HASH_SEED}={bad[1]}) failed {failing.runs}/"
            f"{failing.runs} fresh processes and (random {good[0]}, {HASH_SEED}={good[1]}) "
            f"passed {passing.runs}/{passing.runs}"
        )
    swapped = {
        name: {"runs": arm.runs, "failures": arm.failures}
        for name, arm in arms.items()
        if name in ("random-seed", "hash-seed")
    }
    replay = _command(ctx, bad)
    return Finding(
        SEED_DEPENDENT,
        f"its failures follow {KINDS[kind]}: {named}. A failure that replays from its seed "
        "is a reproducible bug, in the code or in the test, not noise; replay it with "
        f"{replay_variables(bad)} (the command is in "
        "seeds.replay)" + also_non_idempotent(ctx.facts.non_idempotent),
        "seed-dependent: a failing pair of seeds failed every replay in a fresh process and a "
        f"passing pair passed every one (one-sided Fisher p = {p:.3g} < {stats.ALPHA}); "
        "swapping the seeds named " + KINDS[kind],
        seeds={
            "kind": kind,
            "decides": KINDS[kind],
            "failing": {"random_seed": bad[0], "hash_seed": bad[1], "run": bad[2] + 1},
            "passing": {"random_seed": good[0], "hash_seed": good[1], "run": good[2] + 1},
            "confirm": {
                "failing": {"runs": failing.runs, "failures": failing.failures},
                "passing": {"runs": passing.runs, "failures": passing.failures},
                "p_value": p,
            },
            "swapped": swapped,
            "replay": replay,
        },
    )
