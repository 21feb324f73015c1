"""The order phase's victim side: a test that passes alone and fails after a polluter.

Replay the predecessors from the recorded run order, bisect to the polluter,
and confirm the pair against isolation with a one-sided Fisher test of
failures. The replay helpers here are shared with the brittle side
(``brittle``), which looks the other way: a test that fails alone and passes
after the test that sets the state it relies on. Every replay runs the test
once per process, in the order the plugin's ``FLAKEWARDEN_ORDER`` enforces.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional

from flakewarden.errors import ReportError, UsageError
from flakewarden.model import RunReport
from flakewarden.model.verdicts import ORDER_DEPENDENT
from flakewarden.reports.report_json import read_report
from flakewarden.stress import stats
from flakewarden.stress.causes import also_non_idempotent
from flakewarden.stress.runs import NO_RANDOMLY, Job, Runner
from flakewarden.stress.verdict import Arm, Verdict

ORDER_REPLAYS = 2  # processes per bisection step (the full replay runs one more)
ORDER_CONFIRM = 5  # fresh processes that confirm the pair


def recorded_report(stress: Runner) -> RunReport:
    """The ``--order-from`` report; a bad one is the user's to fix (exit code 4)."""
    assert stress.options.order_from is not None
    try:
        return read_report(stress.options.order_from)
    except ReportError as exc:
        raise UsageError(f"--order-from: {exc}") from None


def replay(
    stress: Runner, befores: Sequence[Sequence[str]], arms: Sequence[Arm], processes: int
) -> None:
    """Run the test right after each of ``befores``, in that order, ``processes`` times each.

    All of them start together (as many at once as there are cores), and each
    one's runs are added to its arm.
    """
    test_id = stress.options.test_id
    jobs = [
        Job("order", arm.knob, [*before, test_id], 1, NO_RANDOMLY, ordered=True)
        for before, arm in zip(befores, arms)
        for _ in range(processes)
    ]
    results = stress.run_jobs(jobs, stress.options.cores)
    for index, arm in enumerate(arms):
        stress.tally(arm, results[index * processes : (index + 1) * processes])


def _fails_after(stress: Runner, before: Sequence[str], arm: Arm, processes: int) -> bool:
    failures = arm.failures
    replay(stress, [before], [arm], processes)
    return arm.failures > failures


def order_phase(stress: Runner) -> Optional[Verdict]:
    assert stress.options.order_from is not None
    test_id = stress.options.test_id
    report = recorded_report(stress)
    if test_id not in report.order:
        stress.notes.append(
            f"order: {test_id} is not in the run order of {stress.options.order_from}"
        )
        return None
    before = report.order[: report.order.index(test_id)]
    detail: dict[str, object] = {
        "kind": "victim",
        "source": str(stress.options.order_from),
        "predecessors": len(before),
    }
    if not before:
        stress.notes.append(
            "order: the test ran first in its recorded run; no predecessor to blame"
        )
        return None
    stress.say(f"order: replaying {len(before)} predecessors in the recorded order")
    replayed = Arm("order", "after-predecessors", command=stress.reproduce([*before, test_id]))
    stress.arms.append(replayed)
    if not _fails_after(stress, before, replayed, ORDER_REPLAYS + 1):
        detail["reproduced"] = False
        stress.notes.append(
            f"order: replaying the {len(before)} predecessors in order did not reproduce "
            f"({replayed.failures}/{replayed.runs})"
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
