"""Halving a list of suspects down to the ones that still break the test.

The order phase bisects executed predecessors (``order``) and collected modules
(``imports``) the same way, each asking of a half in its own way whether the
test still fails with it. (A brittle test's state-setters are bisected the
other way round, keeping what it passes after: ``brittle``.)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Callable

from flakewarden.stress.phase import PhaseContext
from flakewarden.stress.verdict import Arm

ORDER_REPLAYS = 2  # processes per bisection step (the full replay runs one more)
ORDER_CONFIRM = 5  # fresh processes that confirm the pair

#: The arm grown by runs with these suspects, and whether the test still failed with them.
FailsWith = Callable[[list[str], Arm], tuple[Arm, bool]]


def bisect(
    ctx: PhaseContext, suspects: Sequence[str], fails_with: FailsWith
) -> tuple[list[str], list[dict[str, object]]]:
    """Halve the suspects while one half alone still fails it, within the budget."""
    candidates = list(suspects)
    steps: list[dict[str, object]] = []
    while len(candidates) > 1 and not ctx.budget.spent():
        half = len(candidates) // 2
        first, second = candidates[:half], candidates[half:]
        probe_arm, in_first = fails_with(first, Arm("order", "bisect"))
        in_second = False
        if not in_first:
            probe_arm, in_second = fails_with(second, probe_arm)
        if in_first:
            candidates = first
        elif in_second:
            candidates = second
        else:
            steps.append({"tried": len(first) + len(second), "result": "needs both halves"})
            break
        steps.append(
            {"kept": len(candidates), "runs": probe_arm.runs, "failures": probe_arm.failures}
        )
    if len(candidates) > 1 and ctx.budget.spent():
        steps.append({"left": len(candidates), "result": "the budget was spent"})
    return candidates, steps
