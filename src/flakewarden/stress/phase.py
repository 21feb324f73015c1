"""What a stress phase is given and what it gives back.

A phase reads a ``PhaseContext`` (the test, the options, what the probe
learned, the facts earlier phases found, the evidence so far, the budget) and
returns a ``PhaseResult`` (a ``Finding`` or none, its arms, notes and first
failure, and the facts a later phase reads). Nothing a phase is handed is
changed from outside it, so a caller can run any phases it needs in any
budget (``engine.run_phases``) without knowing what the others set.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from typing import Any, Callable, Optional

from flakewarden.stress.knobs import Concurrency
from flakewarden.stress.pool import Throttle
from flakewarden.stress.runs import Job, JobResult, Probe, Say, StressOptions, StressProcesses
from flakewarden.stress.verdict import Arm, Failure


@dataclasses.dataclass(frozen=True)
class Finding:
    """A verdict a phase reached: its name, why, the rule, and the fields it fills."""

    verdict: str
    reason: str
    rule: str
    knob: Optional[str] = None
    polluter: Optional[str] = None
    state_setter: Optional[list[str]] = None
    seed: Optional[int] = None
    statistics: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    order: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    seeds: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    power: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    load: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    # the lines to open (``where``): suspects, how they were found, the runs and time it took
    where: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    # a race's knob told apart (``interleaving``): an interleaving at some lines, or a deadline
    timing: Mapping[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Facts:
    """What earlier phases found that a later one reads."""

    isolation: Optional[Arm] = None  # fresh processes, one run each, fixed order and seed
    in_process: Optional[Arm] = None  # processes that repeated the test in-process
    # the repetition evidence when the test leaks state into itself, else empty
    non_idempotent: Mapping[str, object] = dataclasses.field(default_factory=dict)
    always_fails: bool = False  # every fresh run in a fixed order (and every seed swept) failed
    swept: bool = False  # the seed sweep already ran
    drawn: bool = False  # the draws phase (random and hash seeds) already ran
    # how the test failed in the ``--order-from`` run, when it did there: a failure that no
    # phase reproduces is still evidence, and the verdict's reason says so
    recorded_failure: str = ""
    # threads and event loops seen in the isolation runs: which timing knobs can apply
    concurrency: Concurrency = dataclasses.field(default_factory=Concurrency)


@dataclasses.dataclass(frozen=True)
class Budget:
    """The stress run's time: how much has gone and whether the budget is spent."""

    seconds: float
    started: float
    clock: Callable[[], float] = time.monotonic

    def elapsed(self) -> float:
        return self.clock() - self.started

    def left(self) -> float:
        return self.seconds - self.elapsed()

    def spent(self) -> bool:
        return self.elapsed() > self.seconds


@dataclasses.dataclass(frozen=True)
class PhaseContext:
    """Everything a phase reads; a phase returns what it found instead of changing this."""

    options: StressOptions
    probe: Probe
    processes: StressProcesses
    budget: Budget
    say: Say
    facts: Facts = Facts()
    arms: tuple[Arm, ...] = ()  # every arm of the earlier phases, in order
    finding: Optional[Finding] = None  # what a refining phase refines (``engine.REFINERS``)
    first_failure: Optional[Failure] = None  # the first failing run so far, its traceback

    @property
    def test_id(self) -> str:
        return self.options.test_id

    def run(
        self,
        jobs: Sequence[Job],
        parallel: int,
        burn: int = 0,
        *,
        throttle: Optional[Throttle] = None,
    ) -> list[JobResult]:
        """Run jobs through the service, their commands built from what the probe learned."""
        return self.processes.run_jobs(jobs, parallel, burn, throttle=throttle, probe=self.probe)

    def reproduce(
        self,
        ids: Sequence[str],
        *,
        knob: str = "baseline",
        seed: Optional[int] = None,
        burners: int = 0,
        run_share: float = 0.0,
        replay: str = "",
    ) -> str:
        """A command a human can paste to rerun one process of an arm, without flakewarden."""
        return self.probe.reproduce(
            self.options.command,
            ids,
            knob=knob,
            seed=seed,
            burners=burners,
            run_share=run_share,
            replay=replay,
        )


@dataclasses.dataclass(frozen=True)
class PhaseResult:
    """What one phase found: a finding (it ends the run) or none, and its evidence."""

    finding: Optional[Finding] = None
    arms: tuple[Arm, ...] = ()
    notes: tuple[str, ...] = ()
    first_failure: Optional[Failure] = None
    facts: Optional[Facts] = None  # the facts after this phase; None: unchanged


class PhaseEvidence:
    """A phase's own arms, notes and first failure while it runs, then its ``PhaseResult``."""

    def __init__(self, ctx: PhaseContext) -> None:
        self.ctx = ctx
        self.arms: list[Arm] = []
        self.notes: list[str] = []
        self.first_failure: Optional[Failure] = None

    def tally(self, arm: Arm, results: Sequence[JobResult]) -> Arm:
        """``arm`` grown by these runs; it takes the old one's place among this phase's arms."""
        grown, found = self.ctx.processes.tally(arm, results)
        if self.first_failure is None:
            self.first_failure = found
        self.replace(arm, grown)
        return grown

    def replace(self, old: Arm, new: Arm) -> Arm:
        """``new`` where this phase listed ``old`` (the same object), else nowhere; returns it."""
        for index, arm in enumerate(self.arms):
            if arm is old:
                self.arms[index] = new
        return new

    def note(self, text: str) -> None:
        self.notes.append(text)

    def result(
        self, finding: Optional[Finding] = None, facts: Optional[Facts] = None
    ) -> PhaseResult:
        return PhaseResult(finding, tuple(self.arms), tuple(self.notes), self.first_failure, facts)


def also_non_idempotent(non_idempotent: Mapping[str, object]) -> str:
    """The clause a found cause's reason gets when the test also leaks state into itself."""
    if not non_idempotent:
        return ""
    return (
        f"; it is also non-idempotent (failed {non_idempotent['repeat_failures']}/"
        f"{non_idempotent['repeat_runs']} in-process repeats after passing its first run)"
    )


@dataclasses.dataclass(frozen=True)
class Phase:
    """A named phase, the phases whose facts it needs run before it, and when it applies."""

    name: str
    run: Callable[[PhaseContext], PhaseResult]
    applies: Callable[[PhaseContext], bool] = lambda ctx: True
    needs: tuple[str, ...] = ()
