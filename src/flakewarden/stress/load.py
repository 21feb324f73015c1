"""The load knobs, defined by the slowdown the test itself gets rather than by a burner count.

Two arms load the test. ``cpu-load`` runs CPU burners in flakewarden's session
beside one test process; ``throttle`` stops and continues the test's process
group on a duty cycle (``throttle``). After every round each arm's slowdown is
measured: the median duration of the test's runs under the arm against the
median of its baseline runs (same runs per process, so like is compared with
like). While an arm has not reached ``TARGET_SLOWDOWN`` it is escalated (twice
the burners per core; half the run share) up to its last level; a machine or
a test that cannot reach the target is said so in the verdict.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Optional

TARGET_SLOWDOWN = 4.0
BURNERS_PER_CORE = (1, 2, 4, 8)
RUN_SHARES = (0.2, 0.1, 0.05)  # 5x by construction, so that 4x is measured with room
LOAD_KNOBS = ("cpu-load", "throttle")
# A run shorter than this fits in one scheduler time slice (or one throttle period):
# load can delay it whole but not slow it down, so no level is escalated for it.
MIN_SLOWABLE_SECONDS = 0.002
# An escalation that raised the slowdown by less than this factor is the last one.
SATURATED = 1.25


class LoadArm:
    """One load knob: its current level and the durations of the test at each level."""

    def __init__(self, knob: str, cores: int) -> None:
        self.knob = knob
        self.cores = cores
        self.level = 0
        self.durations: dict[int, list[float]] = {}

    @property
    def levels(self) -> int:
        return len(BURNERS_PER_CORE if self.knob == "cpu-load" else RUN_SHARES)

    @property
    def burners(self) -> int:
        return BURNERS_PER_CORE[self.level] * self.cores if self.knob == "cpu-load" else 0

    @property
    def run_share(self) -> float:
        return RUN_SHARES[self.level] if self.knob == "throttle" else 1.0

    def level_name(self, level: Optional[int] = None) -> str:
        level = self.level if level is None else level
        if self.knob == "cpu-load":
            per_core = BURNERS_PER_CORE[level]
            return f"{per_core} burner(s) per core ({per_core * self.cores})"
        share = RUN_SHARES[level]
        return f"runs {100 * share:g}% of the time ({1 / share:g}x by construction)"

    def record(self, durations: Sequence[float]) -> None:
        self.durations.setdefault(self.level, []).extend(durations)

    def slowdown(self, baseline: Sequence[float], level: Optional[int] = None) -> Optional[float]:
        runs = self.durations.get(self.level if level is None else level, [])
        if not runs or not baseline:
            return None
        idle = statistics.median(baseline)
        if idle <= 0:
            return None
        return statistics.median(runs) / idle

    def escalate(self, baseline: Sequence[float]) -> bool:
        """Raise the level when the current one fell short of the target; True when raised."""
        reached = self.slowdown(baseline)
        if reached is None or reached >= TARGET_SLOWDOWN or self.level + 1 >= self.levels:
            return False
        if statistics.median(baseline) < MIN_SLOWABLE_SECONDS:
            return False
        if self.saturated(baseline):
            return False
        self.level += 1
        return True

    def saturated(self, baseline: Sequence[float]) -> bool:
        """The last escalation did not slow the test further: its time is not CPU time.

        Twice the burners that leave the test's duration within a quarter of what
        it was will not reach the target either; they only slow everything else.
        """
        if self.level == 0:
            return False
        now, before = self.slowdown(baseline), self.slowdown(baseline, self.level - 1)
        return now is not None and before is not None and now < SATURATED * before

    def summary(self, baseline: Sequence[float]) -> dict[str, object]:
        final = self.slowdown(baseline)
        rows = [
            {
                "level": self.level_name(level),
                "runs": len(self.durations.get(level, [])),
                "slowdown": None if (s := self.slowdown(baseline, level)) is None else round(s, 2),
            }
            for level in sorted(self.durations)
        ]
        return {
            "target": TARGET_SLOWDOWN,
            "slowdown": None if final is None else round(final, 2),
            "reached": final is not None and final >= TARGET_SLOWDOWN,
            "final_level": self.level_name(),
            "levels": rows,
        }

    def statement(self, baseline: Sequence[float]) -> str:
        final = self.slowdown(baseline)
        if final is None:
            return f"{self.knob}: no slowdown measured (no runs)"
        if final >= TARGET_SLOWDOWN:
            return (
                f"{self.knob}: the test ran {final:.1f}x slower than at baseline "
                f"({self.level_name()})"
            )
        idle = statistics.median(baseline)
        if self.saturated(baseline):
            return (
                f"{self.knob}: the test ran only {final:.1f}x slower than at baseline "
                f"({self.level_name()}), short of the {TARGET_SLOWDOWN:g}x target, and the "
                "last escalation did not slow it further: its time is spent waiting rather "
                "than computing, so more load would not reach the target"
            )
        if idle < MIN_SLOWABLE_SECONDS:
            return (
                f"{self.knob}: the test ran {final:.1f}x slower than at baseline "
                f"({self.level_name()}), short of the {TARGET_SLOWDOWN:g}x target: one run takes "
                f"{1000 * idle:.2f} ms, shorter than a scheduler time slice, so load can delay a "
                "run whole but not slow it down"
            )
        return (
            f"{self.knob}: the test ran only {final:.1f}x slower than at baseline at the last "
            f"level ({self.level_name()}), short of the {TARGET_SLOWDOWN:g}x target: this machine "
            "could not slow it that much, or its time is spent waiting rather than computing"
        )
