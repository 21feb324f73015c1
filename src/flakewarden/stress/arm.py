"""One row of stress evidence: the runs of a test under one phase and knob.

An ``Arm`` is a frozen value. The phase that makes an arm grows it by making a
new one (``grown``) and returns the last one in its ``PhaseResult``; every other
phase reads it and never changes it, so a later step that refines a finding
(a seed check, a localisation) reads the evidence as it was found and returns
its own. Each run is also kept as a ``Sample`` (its process, iteration,
outcome and the seeds it ran under) for the analyses that look at runs one by
one: which seed the failures follow, which lines they ran.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple, Optional

from flakewarden.stress import stats


class Sample(NamedTuple):
    """One run: which process, which in-process iteration, whether it failed, its seeds.

    ``random_seed`` is the seed the plugin gave the ``random`` module (and every generator
    it controls) for this run; ``hash_seed`` the process's ``PYTHONHASHSEED``. None when
    the engine did not set it (a process whose knob replaces the seed, a replay by hand).
    """

    process: int
    iteration: int
    failed: bool
    random_seed: Optional[int] = None
    hash_seed: Optional[int] = None
    # how often each line of the project's code ran, by file and line (localisation runs)
    lines: Optional[Mapping[str, Mapping[int, int]]] = None


@dataclasses.dataclass(frozen=True)
class Arm:
    """Runs of the test under one phase and knob (one row of evidence).

    ``first_runs`` counts the runs that were the first of their process; the
    rest are in-process repeats. They are kept apart because a test that leaks
    state into itself passes every first run and fails its repeats.
    """

    phase: str
    knob: str
    runs: int = 0
    failures: int = 0
    processes: int = 0
    repeat: int = 1
    skipped: int = 0
    crashed: int = 0  # processes that died or hung mid-test (each counted as one failure)
    first_runs: int = 0  # runs that were the first of their process
    first_failures: int = 0
    p_value: Optional[float] = None
    p_adjusted: Optional[float] = None
    command: str = ""  # reproduces one process of this arm by hand
    shard: str = ""  # the runner it ran on, after a merge
    # every run, in the order tallied; not in verdict.json (its counts are)
    samples: tuple[Sample, ...] = dataclasses.field(default=(), compare=False, repr=False)

    @property
    def rate(self) -> float:
        return self.failures / self.runs if self.runs else 0.0

    @property
    def interval(self) -> tuple[float, float]:
        return stats.clopper_pearson(self.failures, self.runs)

    @property
    def upper(self) -> float:
        return stats.upper_bound(self.failures, self.runs)

    @property
    def repeat_runs(self) -> int:
        return self.runs - self.first_runs

    @property
    def repeat_failures(self) -> int:
        return self.failures - self.first_failures

    def grown(
        self,
        samples: Iterable[Sample],
        *,
        processes: int = 0,
        skipped: int = 0,
        crashed: int = 0,
    ) -> Arm:
        """This arm with more runs: each sample is one run, a first run when its iteration is 0."""
        added = tuple(samples)
        firsts = [s for s in added if s.iteration == 0]
        return dataclasses.replace(
            self,
            runs=self.runs + len(added),
            failures=self.failures + sum(s.failed for s in added),
            first_runs=self.first_runs + len(firsts),
            first_failures=self.first_failures + sum(s.failed for s in firsts),
            processes=self.processes + processes,
            skipped=self.skipped + skipped,
            crashed=self.crashed + crashed,
            samples=self.samples + added,
        )

    def to_json(self) -> dict[str, Any]:
        low, high = self.interval
        return {
            "phase": self.phase,
            "knob": self.knob,
            "runs": self.runs,
            "failures": self.failures,
            "rate": round(self.rate, 6),
            "interval95": [round(low, 6), round(high, 6)],
            "upper95": round(self.upper, 6),
            "processes": self.processes,
            "repeat": self.repeat,
            "skipped": self.skipped,
            "crashed": self.crashed,
            "first_runs": self.first_runs,
            "first_failures": self.first_failures,
            "repeat_runs": self.repeat_runs,
            "repeat_failures": self.repeat_failures,
            "p_value": self.p_value,
            "p_adjusted": self.p_adjusted,
            "command": self.command,
            "shard": self.shard,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Arm:
        runs, failures = int(data.get("runs", 0)), int(data.get("failures", 0))
        single = int(data.get("repeat", 1)) <= 1  # one run per process: every run was first
        return cls(
            phase=str(data["phase"]),
            knob=str(data["knob"]),
            runs=runs,
            failures=failures,
            processes=int(data.get("processes", 0)),
            repeat=int(data.get("repeat", 1)),
            skipped=int(data.get("skipped", 0)),
            crashed=int(data.get("crashed", 0)),
            first_runs=int(data.get("first_runs", runs if single else 0)),
            first_failures=int(data.get("first_failures", failures if single else 0)),
            p_value=data.get("p_value"),
            p_adjusted=data.get("p_adjusted"),
            command=str(data.get("command") or ""),
            shard=str(data.get("shard") or ""),
        )
