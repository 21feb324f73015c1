"""The order phase's brittle side: a test that fails alone and passes after its state-setter.

A brittle test is the inverse of a victim: it relies on state that an earlier
test of the suite sets (the state-setter), so it fails every run on its own
and passes in the suite. When every isolated run failed and ``--order-from``
holds a pass of the test, the predecessors it passed after are replayed in
order. A pass there is bisected to the state-setter, keeping a half after
which it still passes; when neither half alone is enough (two state-setters,
one in each half), each half is bisected with the other run before it too.
The pair *state-setter, test* is confirmed in fresh processes against
isolation with a one-sided Fisher test of passes; a pass that nothing
confirms is ``inconclusive``. Without a recorded pass, or when the replay
fails too, the verdict stays ``deterministic`` and its reason says why.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Optional

from flakewarden.model import AttemptOutcome, RunReport
from flakewarden.model.verdicts import INCONCLUSIVE, ORDER_DEPENDENT
from flakewarden.stress import stats
from flakewarden.stress.bisection import ORDER_CONFIRM, ORDER_REPLAYS
from flakewarden.stress.order import recorded_report, replay
from flakewarden.stress.phase import Finding, PhaseContext, PhaseEvidence, also_non_idempotent
from flakewarden.stress.verdict import Arm

SHOWN_SETTERS = 3  # state-setters named in a reason; ``order.state_setter`` lists them all

HINT = (
    "; a test that passes in the suite but fails alone may be brittle (it relies on state "
    "an earlier test sets): to check, stress it with --order-from the report.json of a run "
    "where it passed"
)


@dataclasses.dataclass
class BrittleCheck:
    """What the check found: a verdict, or else what ``deterministic``'s reason adds."""

    finding: Optional[Finding] = None
    clause: str = ""
    order: dict[str, object] = dataclasses.field(default_factory=dict)


def brittle_check(ctx: PhaseContext, found: PhaseEvidence) -> BrittleCheck:
    """Weigh a recorded pass of a test that failed every isolated run."""
    source = ctx.options.order_from
    if source is None:
        return BrittleCheck(clause=HINT)
    test_id = ctx.test_id
    report = recorded_report(ctx.options)
    if test_id not in report.order:
        found.note(f"order: {test_id} is not in the run order of {source}")
        return BrittleCheck(
            clause=f"; it is not in the run order of {source}, so no recorded order was replayed"
        )
    result = next((t for t in report.tests if t.id == test_id), None)
    attempt = 1  # a report that holds no outcome of the test: replay its run order
    if result is not None:
        passes = [a.attempt for a in result.attempts if a.outcome == AttemptOutcome.PASSED]
        if not passes:
            return BrittleCheck(
                clause=f"; its recorded run ({source}) holds no pass of it either "
                f"(outcome {result.outcome}), so there was no order it passed in to replay"
            )
        attempt = passes[0]
    before = _predecessors(report, test_id, attempt)
    detail: dict[str, object] = {
        "kind": "brittle",
        "source": str(source),
        "recorded_outcome": None if result is None else str(result.outcome),
        "attempt": attempt,
        "predecessors": len(before),
    }
    where = f"{source}, attempt {attempt}" if attempt > 1 else str(source)
    if not before:
        return BrittleCheck(
            clause=f"; it passed in its recorded run ({where}) with no test before it, so "
            "no earlier test sets state it needs: the code or the environment changed, "
            "not the order",
            order=detail,
        )
    return _replay_the_pass(ctx, found, before, where, detail)


def _replay_the_pass(
    ctx: PhaseContext,
    found: PhaseEvidence,
    before: list[str],
    where: str,
    detail: dict[str, object],
) -> BrittleCheck:
    """Replay the predecessors it passed after; a pass there is bisected to the state-setter."""
    ctx.say(f"order: replaying the {len(before)} predecessors it passed after, in order")
    replayed = Arm("order", "after-predecessors", command=ctx.reproduce([*before, ctx.test_id]))
    found.arms.append(replayed)
    (replayed,) = replay(ctx, found, [before], [replayed], ORDER_REPLAYS + 1)
    detail["replay"] = {"runs": replayed.runs, "passes": _passes(replayed)}
    if not _passes(replayed):
        detail["reproduced"] = False
        found.note(
            f"order: the recorded run ({where}) holds a pass of it, but replaying its "
            f"{len(before)} predecessors in that order failed it too "
            f"({replayed.failures}/{replayed.runs})"
        )
        return BrittleCheck(
            clause=f"; replaying the {len(before)} predecessors it passed after in its recorded "
            f"run ({where}), in order, failed it too ({replayed.failures}/{replayed.runs} "
            "runs): it fails even in the order it passed in",
            order=detail,
        )
    detail["reproduced"] = True
    return _find_state_setter(ctx, found, before, replayed, detail)


def _find_state_setter(
    ctx: PhaseContext,
    found: PhaseEvidence,
    before: list[str],
    replayed: Arm,
    detail: dict[str, object],
) -> BrittleCheck:
    """Bisect to the state-setter and confirm it; all predecessors when the narrowed set fails."""
    isolation = ctx.facts.isolation
    assert isolation is not None
    candidates, steps = _narrow(ctx, found, before)
    detail["bisection"] = steps
    confirm, p = _confirm(ctx, found, candidates, "after-state-setter", isolation)
    if p >= stats.ALPHA and candidates != before:
        if ctx.budget.spent():
            found.note(
                f"order: {_names(candidates)} did not confirm as the state-setter "
                f"(p = {p:.3g}) and the budget is spent: the whole predecessor set was not tried"
            )
        else:
            found.note(
                f"order: the narrowed set {_names(candidates)} did not confirm (p = {p:.3g}): "
                f"trying all {len(before)} predecessors as the state-setter"
            )
            candidates = list(before)
            confirm, p = _confirm(ctx, found, candidates, "after-all-predecessors", isolation)
    detail["confirm"] = {
        "setters": len(candidates),
        "runs": confirm.runs,
        "passes": _passes(confirm),
        "p_value": p,
    }
    non_idempotent = ctx.facts.non_idempotent
    if p < stats.ALPHA:
        detail["state_setter"] = candidates
        return BrittleCheck(
            finding=brittle_finding(isolation, candidates, confirm, p, detail, non_idempotent)
        )
    detail["candidates"] = candidates
    return BrittleCheck(finding=unconfirmed_finding(isolation, replayed, before, p, detail))


def _predecessors(report: RunReport, test_id: str, attempt: int) -> list[str]:
    """The tests that ran before it in the attempt where it passed.

    The run order is attempt 1's; a rerun attempt ran its selection in that same
    collection order, so its predecessors are the earlier tests it reran.
    """
    before = report.order[: report.order.index(test_id)]
    if attempt <= 1:
        return before
    rerun = next((a for a in report.attempts if a.number == attempt), None)
    if rerun is None or not rerun.selected:
        return before
    selected = set(rerun.selected)
    return [t for t in before if t in selected]


def _passes(arm: Arm) -> int:
    return arm.runs - arm.failures


def _narrow(
    ctx: PhaseContext, found: PhaseEvidence, before: list[str]
) -> tuple[list[str], list[dict[str, object]]]:
    """Bisect ``before`` to the tests it needs in front of it, and the steps taken."""
    steps: list[dict[str, object]] = []
    needed = _bisect(ctx, found, before, before, [], steps)
    if ctx.budget.spent():
        found.note(
            f"order: the budget ran out while bisecting, at {len(needed)} candidate "
            "state-setter test(s): those are what is confirmed"
        )
    return _in_order(before, needed), steps


def _bisect(
    ctx: PhaseContext,
    found: PhaseEvidence,
    before: list[str],
    candidates: list[str],
    context: list[str],
    steps: list[dict[str, object]],
) -> list[str]:
    """The part of ``candidates`` it needs, when ``context`` runs before it as well.

    Each half (with the context, in the recorded order) is replayed twice, both
    halves at once. A half after which it passes is kept, as the polluter's
    bisection keeps a half after which it fails. When neither half alone is
    enough (two state-setters, one in each half), each half is narrowed with
    the other one run before it too, so both state-setters are found.
    """
    if len(candidates) <= 1 or ctx.budget.spent():
        return candidates
    half = len(candidates) // 2
    first, second = candidates[:half], candidates[half:]
    arms = replay(
        ctx,
        found,
        [_in_order(before, [*context, *part]) for part in (first, second)],
        [Arm("order", "bisect"), Arm("order", "bisect")],
        ORDER_REPLAYS,
    )
    passes = [_passes(arm) for arm in arms]
    kept = "first half" if passes[0] else "second half" if passes[1] else "both halves"
    steps.append(
        {
            "context": len(context),
            "sizes": [len(first), len(second)],
            "passes": passes,
            "runs": [arm.runs for arm in arms],
            "kept": kept,
        }
    )
    if passes[0]:
        return _bisect(ctx, found, before, first, context, steps)
    if passes[1]:
        return _bisect(ctx, found, before, second, context, steps)
    needed = _bisect(ctx, found, before, first, [*context, *second], steps)
    return needed + _bisect(ctx, found, before, second, [*context, *needed], steps)


def _in_order(before: list[str], tests: Sequence[str]) -> list[str]:
    """``tests`` in the order they ran in the recorded run."""
    wanted = set(tests)
    return [t for t in before if t in wanted]


def _confirm(
    ctx: PhaseContext, found: PhaseEvidence, setters: list[str], knob: str, isolation: Arm
) -> tuple[Arm, float]:
    """The pair in fresh processes; p of passing more often than in isolation."""
    ctx.say(f"order: confirming {len(setters)} state-setter test(s), then the test")
    arm = Arm("order", knob, command=ctx.reproduce([*setters, ctx.test_id]))
    found.arms.append(arm)
    (arm,) = replay(ctx, found, [setters], [arm], ORDER_CONFIRM)
    p = stats.fisher_greater(_passes(isolation), isolation.runs, _passes(arm), arm.runs)
    arm = found.replace(arm, dataclasses.replace(arm, p_value=p))
    return arm, p


def _names(tests: Sequence[str]) -> str:
    if len(tests) <= SHOWN_SETTERS:
        return " + ".join(tests)
    shown = " + ".join(tests[: SHOWN_SETTERS - 1])
    return f"{shown} and {len(tests) - SHOWN_SETTERS + 1} more (order.state_setter lists them)"


def brittle_finding(
    isolation: Arm,
    setters: list[str],
    confirm: Arm,
    p: float,
    detail: dict[str, object],
    non_idempotent: Mapping[str, object],
) -> Finding:
    """Brittle: it passed significantly more often right after its state-setter(s)."""
    names = _names(setters)
    one = len(setters) == 1
    return Finding(
        ORDER_DEPENDENT,
        f"fails alone ({isolation.failures}/{isolation.runs} isolated runs failed) but passed "
        f"{_passes(confirm)}/{confirm.runs} times right after its "
        f"state-setter{'' if one else 's'} {names}: brittle, it relies on state "
        f"{names + ' sets' if one else 'they set'}" + also_non_idempotent(non_idempotent),
        "order-dependent (brittle): one-sided Fisher exact test of passes right after the "
        f"state-setter against passes in isolation, p = {p:.3g} < {stats.ALPHA}",
        order=detail,
        state_setter=list(setters),
    )


def unconfirmed_finding(
    isolation: Arm, replayed: Arm, before: list[str], p: float, detail: dict[str, object]
) -> Finding:
    """A pass after its predecessors that no state-setter confirmed: neither break nor order."""
    return Finding(
        INCONCLUSIVE,
        f"fails alone ({isolation.failures}/{isolation.runs} isolated runs failed) but passed "
        f"{_passes(replayed)}/{replayed.runs} times right after its {len(before)} recorded "
        f"predecessors, and no state-setter confirmed (p = {p:.3g}): neither a real break "
        "nor a found order dependence",
        "inconclusive: a pass after its recorded predecessors argues against a real break, "
        "but no state-setter passed significantly more often than isolation (one-sided "
        f"Fisher exact test of passes, p = {p:.3g} >= {stats.ALPHA})",
        order=detail,
    )
