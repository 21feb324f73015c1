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

#: Whether the test still fails with these suspects (its runs are added to the arm).
FailsWith = Callable[[list[str], Arm], bool]


def bisect(
    ctx: PhaseContext, suspects: Sequence[str], fails_with: FailsWith
) -> tuple[list[str], list[dict[str, object]]]:
    """Halve the suspects while one half alone still fails it, within the budget."""
    candidates = list(suspects)
    steps: list[dict[str, object]] = []
    while len(candidates) > 1 and not ctx.budget.spent():
        half = len(candidates) // 2
        first, second = candidates[:half], candidates[half:]
        probe_arm = Arm("order", "bisect")
        if fails_with(first, probe_arm):
            candidates = first
        elif fails_with(second, probe_arm):
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
