"""The await points whose order decides an asyncio race, each confirmed on its own.

A refining phase after ``where``, for a ``race`` the ``asyncio`` knob found. The knob
shuffles every ready callback; here it moves only the tasks suspended at one await point
at a time (``FLAKEWARDEN_ASYNCIO_LINES``, timers left unjittered), for each await point
the failing runs executed (the suspects first). An await point whose moves fail the test
where moving the tasks at the await points that never fail it does not (one-sided
Fisher, p < 0.05) is one whose order decides the race: "moving the tasks suspended at
cache.py:12 alone failed it 8/12 runs, at the other await points (cache.py:20) 0/12".
When every await point fails it, or none does, that is said instead.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence
from typing import Any

from flakewarden.model.verdicts import RACE
from flakewarden.stress import cues, stats
from flakewarden.stress.arm import Arm, Sample
from flakewarden.stress.cues import Sources
from flakewarden.stress.interleaving import (
    confirmed,
    counted,
    mean_count,
    pause_arms,
    suspects_of,
)
from flakewarden.stress.phase import PhaseContext, PhaseEvidence, PhaseResult

MAX_AWAITS = 6  # await points tried, one arm each


def applies(ctx: PhaseContext) -> bool:
    finding = ctx.finding
    if finding is None or finding.verdict != RACE or finding.knob != "asyncio":
        return False
    return bool(counted(ctx.arms))


def _moved(lines: Sequence[tuple[str, int]]) -> dict[str, str]:
    """The asyncio knob moving only the tasks suspended at ``lines``; no timer jitter."""
    seed = random.SystemRandom().randrange(1, 2**31)
    listed = ",".join(f"{f}:{n}" for f, n in lines)
    return {"FLAKEWARDEN_ASYNCIO": f"{seed}:0", "FLAKEWARDEN_ASYNCIO_LINES": listed}


def await_points_phase(ctx: PhaseContext) -> PhaseResult:
    """Each await point alone; the finding comes back with ``timing`` naming the deciders."""
    found = PhaseEvidence(ctx)
    finding = ctx.finding
    assert finding is not None
    started = ctx.budget.elapsed()
    runs = counted(ctx.arms)
    source = Sources(ctx.probe.rootdir)

    points = _await_points(finding.where, runs, source)
    if len(points) < 2:
        found.note("await points: fewer than two await points ran: none to tell apart")
        return found.result()
    ctx.say(f"await points: moving the tasks at each of {len(points)} await points alone")
    names = {f"at {f}:{n}": (f, n) for f, n in points}
    arms = pause_arms(
        ctx, found, runs, {name: [line] for name, line in names.items()}, _moved, "await-points"
    )
    quiet = [name for name, arm in arms.items() if arm.runs and not arm.failures]
    rest = Arm("await-points", "quiet").grown(s for n in quiet for s in arms[n].samples)
    deciding = {
        name: arm
        for name, arm in arms.items()
        if arm.failures
        and stats.fisher_greater(rest.failures, rest.runs, arm.failures, arm.runs) < stats.ALPHA
    }
    counts: dict[str, Any] = {
        name[3:]: {"runs": arm.runs, "failures": arm.failures} for name, arm in arms.items()
    }
    timing: dict[str, Any] = {
        "kind": "not shown",
        "by": "await points",
        "alone": counts,
        "seconds": round(ctx.budget.elapsed() - started, 3),
    }
    if not deciding or not quiet:
        every = "every" if not quiet else "no"
        found.note(
            f"await points: moving the tasks at {every} await point alone failed it: "
            "none told apart"
        )
        return found.result(dataclasses.replace(finding, timing=timing))
    chosen = [names[name] for name in deciding]
    shown = "; ".join(
        f"moving the tasks suspended at {name[3:]} alone failed it {arm.failures}/{arm.runs} runs"
        for name, arm in deciding.items()
    )
    others = ", ".join(name[3:] for name in quiet)
    said = f"{shown}; at the other await points ({others}) {rest.failures}/{rest.runs}"
    timing.update(
        kind="interleaving",
        lines=[f"{f}:{n}" for f, n in chosen],
        elsewhere={"runs": rest.runs, "failures": rest.failures},
    )
    reason = (
        f"{finding.reason.rstrip('.')}; {said}: the order of the tasks at those awaits decides it"
    )
    where = confirmed(finding.where, chosen, said, source)
    return found.result(dataclasses.replace(finding, reason=reason, timing=timing, where=where))


def _await_points(where: Any, runs: Sequence[Sample], source: Any) -> list[tuple[str, int]]:
    """The await points the failing runs executed: the suspects first, then the busiest."""
    failing = [s for s in runs if s.failed and s.lines]
    ran = {(f, n) for s in failing for f, lines in (s.lines or {}).items() for n in lines}
    awaits = [key for key in sorted(ran) if cues.AWAIT in source(key[0]).cues.get(key[1], set())]
    suspected = [(s.file, s.line) for s in suspects_of(where) if (s.file, s.line) in set(awaits)]
    busiest = sorted(awaits, key=lambda key: -mean_count(failing, key))
    return list(dict.fromkeys([*suspected, *busiest]))[:MAX_AWAITS]
