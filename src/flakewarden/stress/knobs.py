"""The timing phase's knobs: what each changes, where it can apply, and how to replay it.

Five knobs tighten a test's timing against the baseline:

- ``switch-interval``: the plugin calls ``sys.setswitchinterval(1e-05)``; threads
  switch ~500x more often, at calls and backward jumps.
- ``yield``: the plugin makes the running thread give up the processor, with a seeded
  probability per opcode of the project's own code, so a window inside one line
  (``self.count += 1``) can be interleaved; it works on free-threaded builds too,
  where the switch interval decides nothing.
- ``asyncio``: the plugin shuffles the order of an event loop's ready callbacks in each
  iteration and jitters its timers, seeded, so task-order races appear on a quiet machine.
- ``cpu-load`` and ``throttle`` (``load``): the test slowed against the clock.

A knob that cannot apply costs nothing: ``switch-interval`` and ``yield`` change only
how Python threads interleave, so a test in which no thread ran beside its own is not
run under them; ``asyncio`` changes only event loops, so a test that ran none is not
run under it. The plugin records both facts for every run (``FLAKEWARDEN_CONCURRENCY``);
the isolation runs decide, before the timing phase starts, so the race test's
correction counts only the knobs that run. The load knobs always apply.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

from flakewarden.model import TestRecord
from flakewarden.stress.load import LOAD_KNOBS

SWITCH_INTERVAL = "1e-05"
# The chance, per opcode of the project's code, that the running thread yields.
YIELD_PROBABILITY = 0.001
THREAD_KNOBS = ("switch-interval", "yield")
LOOP_KNOBS = ("asyncio",)
# Run in the unloaded step, beside the baseline, at most half the cores.
UNLOADED_KNOBS = (*THREAD_KNOBS, *LOOP_KNOBS)
ALL_KNOBS = (*UNLOADED_KNOBS, *LOAD_KNOBS)
# Seeded knobs: their variable carries the seed, so one process's schedule can be replayed.
SEED_VARIABLES = {"yield": "FLAKEWARDEN_YIELD", "asyncio": "FLAKEWARDEN_ASYNCIO"}
# Every run's generators draw from this seed (the plugin's ``seeds``): the engine sets it.
RANDOM_SEED_VARIABLE = "FLAKEWARDEN_RANDOM_SEED"
KNOB_VARIABLES = ("FLAKEWARDEN_SWITCH_INTERVAL", *SEED_VARIABLES.values(), RANDOM_SEED_VARIABLE)
CONCURRENCY_VARIABLE = "FLAKEWARDEN_CONCURRENCY"

DESCRIPTIONS = {
    "switch-interval": "sys.setswitchinterval(1e-05): threads switch ~500x more often",
    "yield": f"the running thread yields at an opcode of the project's code with probability "
    f"{YIELD_PROBABILITY:g} (seeded): a window inside one line can be interleaved",
    "asyncio": "the event loop's ready callbacks shuffled in each iteration and its timers "
    "jittered (seeded): tasks run in orders a quiet machine never shows",
    "cpu-load": "CPU-burning processes beside the test, escalated until the test itself runs "
    "4x slower than at baseline",
    "throttle": "the test's process group stopped for 4/5 or more of every short period "
    "(SIGSTOP/SIGCONT): its CPU work takes 5x or more as long by the clock",
}


def knob_env(knob: str, seed: int) -> dict[str, str]:
    """The plugin's variables for one process of ``knob`` (``seed`` for the seeded knobs)."""
    if knob == "switch-interval":
        return {"FLAKEWARDEN_SWITCH_INTERVAL": SWITCH_INTERVAL}
    if knob == "yield":
        return {"FLAKEWARDEN_YIELD": f"{seed}:{YIELD_PROBABILITY:g}"}
    if knob == "asyncio":
        return {"FLAKEWARDEN_ASYNCIO": str(seed)}
    return {}


def replay_of(knob: str, env: dict[str, str]) -> str:
    """The variable assignment that replays one process's schedule (seeded knobs), or ``""``."""
    variable = SEED_VARIABLES.get(knob)
    value = env.get(variable or "")
    return f"{variable}={value}" if variable and value else ""


@dataclasses.dataclass(frozen=True)
class Concurrency:
    """What the plugin saw of threads and event loops in the runs read so far."""

    runs: int = 0
    threaded: int = 0  # runs in which a thread ran beside the test's own
    looped: int = 0  # runs in which an event loop ran

    def add(self, records: Iterable[TestRecord]) -> Concurrency:
        runs, threaded, looped = self.runs, self.threaded, self.looped
        for record in records:
            if record.threads is None or record.event_loop is None:
                continue  # not recorded: no evidence either way
            runs += 1
            threaded += record.threads > 0
            looped += record.event_loop > 0
        return Concurrency(runs, threaded, looped)


def applicable(concurrency: Concurrency) -> tuple[list[str], dict[str, str]]:
    """The knobs to run, and why each other knob cannot apply (it then costs no runs).

    With no run read (no record, or a plugin too old to record it), every knob runs:
    a knob is left out only on evidence that it cannot apply.
    """
    runs = concurrency.runs
    if not runs:
        return list(ALL_KNOBS), {}
    skipped: dict[str, str] = {}
    if not concurrency.threaded:
        for knob in THREAD_KNOBS:
            skipped[knob] = (
                f"not applicable: no thread ran beside the test's own in its {runs} isolation "
                "runs, and this knob changes only how Python threads interleave"
            )
    if not concurrency.looped:
        for knob in LOOP_KNOBS:
            skipped[knob] = (
                f"not applicable: no event loop ran in the test's {runs} isolation runs, and "
                "this knob changes only an asyncio event loop's scheduling"
            )
    return [k for k in ALL_KNOBS if k not in skipped], skipped


def order_of(knobs: Sequence[str]) -> list[str]:
    """The knobs in the order the timing phase runs them."""
    return sorted(knobs, key=lambda k: (ALL_KNOBS.index(k) if k in ALL_KNOBS else 99, k))
