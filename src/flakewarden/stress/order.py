"""The order phase's victim side: a test that passes alone and fails after a polluter.

Replay the predecessors from the recorded run order, bisect to the polluter,
and confirm the pair against isolation with a one-sided Fisher test of
failures. A replay collects the predecessors' modules as well as running them,
so before the pair is confirmed the polluter's module is collected without
running it: when that alone fails the test, the polluter is the module's import
(``imports``), not the test. When the replay does not reproduce a failure the
recorded run holds (or no test ran before it), the recorded run's collection is
the suspect that remains (``imports`` again). The replay helpers here are shared
with the brittle side (``brittle``), which looks the other way: a test that
fails alone and passes after the test that sets the state it relies on. Every
replay runs the test once per process, in the order the plugin's
``FLAKEWARDEN_ORDER`` enforces.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Optional

from flakewarden.errors import ReportError, UsageError
from flakewarden.model import RunReport
from flakewarden.model.verdicts import ORDER_DEPENDENT
from flakewarden.reports.report_json import read_report
from flakewarden.stress import imports, stats
from flakewarden.stress.bisection import ORDER_CONFIRM, ORDER_REPLAYS, bisect
from flakewarden.stress.phase import (
    Finding,
    PhaseContext,
    PhaseEvidence,
    PhaseResult,
    also_non_idempotent,
)
from flakewarden.stress.runs import NO_RANDOMLY, Job, StressOptions
from flakewarden.stress.verdict import Arm


def recorded_report(options: StressOptions) -> RunReport:
    """The ``--order-from`` report; a bad one is the user's to fix (exit code 4)."""
    assert options.order_from is not None
    try:
        return read_report(options.order_from)
    except ReportError as exc:
        raise UsageError(f"--order-from: {exc}") from None


def replay(
    ctx: PhaseContext,
    found: PhaseEvidence,
    befores: Sequence[Sequence[str]],
    arms: Sequence[Arm],
    processes: int,
) -> list[Arm]:
    """Run the test right after each of ``befores``, in that order, ``processes`` times each.

    All of them start together (as many at once as there are cores); each arm comes
    back grown by its runs.
    """
    jobs = [
        Job("order", arm.knob, [*before, ctx.test_id], 1, NO_RANDOMLY, ordered=True)
        for before, arm in zip(befores, arms)
        for _ in range(processes)
    ]
    results = ctx.run(jobs, ctx.options.cores)
    return [
        found.tally(arm, results[index * processes : (index + 1) * processes])
        for index, arm in enumerate(arms)
    ]


def fails_after(
    ctx: PhaseContext, found: PhaseEvidence, before: Sequence[str], arm: Arm, processes: int
) -> tuple[Arm, bool]:
    """``arm`` grown by ``processes`` runs right after ``before``, and whether any failed."""
    (grown,) = replay(ctx, found, [before], [arm], processes)
    return grown, grown.failures > arm.failures


def applies(ctx: PhaseContext) -> bool:
    """A recorded run to replay, and a test that passed every fresh run."""
    isolation = ctx.facts.isolation
    return ctx.options.order_from is not None and isolation is not None and not isolation.failures


def order_phase(ctx: PhaseContext) -> PhaseResult:
    """Replay the recorded predecessors; bisect a failure there to the polluter and confirm it.

    When they do not fail it but the recorded run did, its collection is replayed
    and bisected to the module whose import fails it (``imports``).
    """
    assert ctx.options.order_from is not None
    found = PhaseEvidence(ctx)
    test_id = ctx.test_id
    report = recorded_report(ctx.options)
    if test_id not in report.order:
        found.note(f"order: {test_id} is not in the run order of {ctx.options.order_from}")
        return found.result()
    recorded = imports.recorded_failure(report, test_id, ctx.options.order_from)
    facts = dataclasses.replace(ctx.facts, recorded_failure=recorded) if recorded else None
    before = report.order[: report.order.index(test_id)]
    detail: dict[str, object] = {
        "kind": "victim",
        "source": str(ctx.options.order_from),
        "predecessors": len(before),
    }
    if not before:
        found.note("order: the test ran first in its recorded run; no predecessor to blame")
        return found.result(imports.from_collection(ctx, found, recorded, detail), facts)
    ctx.say(f"order: replaying {len(before)} predecessors in the recorded order")
    replayed = Arm("order", "after-predecessors", command=ctx.reproduce([*before, test_id]))
    found.arms.append(replayed)
    replayed, failed = fails_after(ctx, found, before, replayed, ORDER_REPLAYS + 1)
    if not failed:
        detail["reproduced"] = False
        found.note(
            f"order: replaying the {len(before)} predecessors in order did not reproduce "
            f"({replayed.failures}/{replayed.runs})"
        )
        return found.result(imports.from_collection(ctx, found, recorded, detail), facts)
    candidates, detail["bisection"] = bisect(
        ctx,
        before,
        lambda subset, arm: fails_after(ctx, found, subset, arm, ORDER_REPLAYS),
    )
    by_import = imports.from_polluters(ctx, found, candidates, detail)
    if by_import is not None:
        return found.result(by_import, facts)
    return found.result(_confirm(ctx, found, candidates, detail), facts)


def _confirm(
    ctx: PhaseContext, found: PhaseEvidence, candidates: list[str], detail: dict[str, object]
) -> Optional[Finding]:
    """The polluter and the test in fresh processes, against isolation (one-sided Fisher)."""
    isolation = ctx.facts.isolation
    assert isolation is not None
    polluter = " + ".join(candidates)
    confirm = Arm("order", "after-polluter", command=ctx.reproduce([*candidates, ctx.test_id]))
    found.arms.append(confirm)
    confirm, _ = fails_after(ctx, found, candidates, confirm, ORDER_CONFIRM)
    p = stats.fisher_greater(isolation.failures, isolation.runs, confirm.failures, confirm.runs)
    confirm = found.replace(confirm, dataclasses.replace(confirm, p_value=p))
    detail["polluters"] = candidates
    detail["confirm"] = {"runs": confirm.runs, "failures": confirm.failures, "p_value": p}
    if p < stats.ALPHA:
        return Finding(
            ORDER_DEPENDENT,
            f"passes alone ({isolation.failures}/{isolation.runs} failures) but failed "
            f"{confirm.failures}/{confirm.runs} times right after {polluter}"
            + also_non_idempotent(ctx.facts.non_idempotent),
            "order-dependent: one-sided Fisher exact test of failures right after the "
            f"polluter against isolation, p = {p:.3g} < {stats.ALPHA}",
            polluter=polluter,
            order=detail,
        )
    found.note(f"order: bisection ended at {polluter} but it did not confirm (p = {p:.3g})")
    return None
