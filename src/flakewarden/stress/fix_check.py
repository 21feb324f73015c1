"""What a stress verdict says about a fix: held, did not hold, or unverified.

The stress engine's verdict is the one judgement of a test under its knobs; a fix
check reads it rather than running anything of its own (as burn-in of new tests
will): **any** failure under any arm means the fix did not hold, whatever the
verdict's name; no failure, in a not-reproducible verdict whose runs bound every knob's effect
within the margin, means it held, with an upper bound on the failure rate the runs
allow; anything short of that (inconclusive, an error, too few runs to bound the
knobs) proves nothing either way: the fix is unverified.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from flakewarden.model.binomial import upper_bound
from flakewarden.model.verdicts import ERROR, INCONCLUSIVE, NOT_REPRODUCIBLE
from flakewarden.stress.verdict import Verdict

HELD = "held"
FAILED = "failed"
UNVERIFIED = "unverified"
CONFIDENCE = 0.95


@dataclasses.dataclass(frozen=True)
class FixCheck:
    result: str  # held, failed, unverified
    verdict: str
    runs: int
    failures: int
    bound: float  # with 95% confidence the failure rate is below this (held: 0 failures)
    why: str

    def to_json(self) -> dict[str, Any]:
        return {
            "result": self.result,
            "verdict": self.verdict,
            "runs": self.runs,
            "failures": self.failures,
            "bound": round(self.bound, 6),
        }


def judge(verdict: Verdict) -> FixCheck:
    runs = sum(arm.runs for arm in verdict.arms)
    failures = sum(arm.failures for arm in verdict.arms)
    bound = upper_bound(failures, runs, CONFIDENCE) if runs else 1.0
    if failures:
        worst = max(verdict.arms, key=lambda a: (a.failures, a.runs))
        why = (
            f"{failures} of {runs} runs failed under stress "
            f"({worst.failures} of {worst.runs} in {worst.phase} {worst.knob}); "
            f"verdict {verdict.verdict}: {verdict.reason}"
        )
        return FixCheck(FAILED, verdict.verdict, runs, failures, bound, why)
    if verdict.verdict in (INCONCLUSIVE, ERROR) or not runs:
        why = verdict.reason or "the stress check made no runs"
        return FixCheck(UNVERIFIED, verdict.verdict, runs, 0, bound, why)
    if verdict.verdict != NOT_REPRODUCIBLE or not verdict.bounded:
        why = (
            f"{runs} runs under stress, none failed, but too few to rule out what the knobs "
            f"could hide (the failure rate is only known to be below {bound:.1%}): "
            f"{verdict.reason}"
        )
        return FixCheck(UNVERIFIED, verdict.verdict, runs, 0, bound, why)
    why = (
        f"{runs} runs under stress, none failed: with 95% confidence its failure rate is "
        f"below {bound:.2%}"
    )
    return FixCheck(HELD, verdict.verdict, runs, 0, bound, why)
