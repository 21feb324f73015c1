"""Burn-in's one door into the stress engine: run it on one test, and read its verdict.

The engine is the source of every verdict and statistic; burn-in only chooses the test,
its budget and its folder. Keeping each use of the engine's interface here means a
change to that interface is adapted in this one module.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable, Optional

from flakewarden.stress.verdict import Verdict

Say = Callable[[str], None]

# The engine's reason for knobs left open says what budget would settle them.
_BUDGET_HINT = re.compile(r"--budget-seconds (\d+(?:\.\d+)?)")


def stress_test(
    test_id: str,
    command: list[str],
    cwd: Path,
    directory: Path,
    budget: float,
    say: Say,
    order_from: Optional[Path] = None,
) -> Verdict:
    """Stress ``test_id`` for about ``budget`` seconds; its files go in ``directory``.

    ``order_from``: a report whose run order the engine's order phase replays (the test's
    file's other tests, then the test), so a polluter among them is named.
    """
    # Imported here: a burn-in that selects nothing never pays for the engine's import.
    from flakewarden.stress.engine import StressOptions, run_phases
    from flakewarden.stress.verdict_render import write_verdict

    options = StressOptions(
        test_id=test_id,
        command=list(command),
        cwd=cwd,
        report_dir=directory.resolve(),
        budget_seconds=budget,
        order_from=order_from,
    )
    verdict = run_phases(options, say=say)
    write_verdict(verdict, directory)
    return verdict


def reproduce(verdict: Verdict) -> str:
    """The command the verdict gives to see the failure by hand: its knob's arm, else the
    arm of its first failing run, else its first arm's."""
    arms = [arm for arm in verdict.arms if arm.command]
    failure = verdict.first_failure
    for found in (
        next((a for a in arms if verdict.knob and a.knob == verdict.knob), None),
        next(
            (a for a in arms if failure and (a.phase, a.knob) == (failure.phase, failure.knob)),
            None,
        ),
        next((a for a in arms if a.failures), None),
        arms[0] if arms else None,
    ):
        if found is not None:
            return found.command
    return ""


def budget_to_bound(verdict: Verdict) -> Optional[float]:
    """About what budget would settle the knobs the verdict left open, when it says."""
    if verdict.bounded:
        return None
    found = _BUDGET_HINT.search(verdict.reason)
    return float(found.group(1)) if found else None
