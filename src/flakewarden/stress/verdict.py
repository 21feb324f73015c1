"""The stress verdict and its evidence as data: what ``verdict.json`` holds.

A verdict is only as good as the evidence a reviewer can check, so the record
carries every arm's counts and bounds (first runs in a process apart from
in-process repeats), the p-values, the rule that decided, the first failing
run's full traceback and a command that reproduces each arm. Rendering is in
``verdict_render``, merging shards in ``verdict_merge``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Optional

from flakewarden.errors import ReportError
from flakewarden.model.suspects import Suspect
from flakewarden.model.verdicts import (
    DRAW_KINDS,
    NEEDS_BOUND,
    QUARANTINE_ALLOWED,
    RACE,
    SEED_DEPENDENT,
    VERDICTS,
)
from flakewarden.outside_json import read_json
from flakewarden.stress.arm import Arm, Sample
from flakewarden.stress.knobs import DESCRIPTIONS

SCHEMA_VERSION = 1
__all__ = ["Arm", "Failure", "Sample", "Verdict", "read_verdict"]


KNOB_DESCRIPTIONS = {
    "baseline": "no knob: fixed order (-p no:randomly), default switch interval, no extra load",
    **DESCRIPTIONS,
}


@dataclasses.dataclass
class Failure:
    """The first failing run: where it ran and its full (``--tb=long``) traceback."""

    phase: str
    knob: str
    process: int
    iteration: int
    message: str
    traceback: str
    log: str = ""  # the process's output file, relative to the report dir

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Failure:
        return cls(
            phase=str(data.get("phase") or ""),
            knob=str(data.get("knob") or ""),
            process=int(data.get("process", 0)),
            iteration=int(data.get("iteration", 0)),
            message=str(data.get("message") or ""),
            traceback=str(data.get("traceback") or ""),
            log=str(data.get("log") or ""),
        )


@dataclasses.dataclass
class Verdict:
    """What ``flakewarden stress`` concluded about one test, with the evidence."""

    test_id: str
    verdict: str
    reason: str
    rule: str
    arms: list[Arm] = dataclasses.field(default_factory=list)
    knob: Optional[str] = None  # race: the tightening knob that raised the rate most
    polluter: Optional[str] = None  # order-dependent (victim): the test that must not run first
    # order-dependent (brittle): the earlier test(s) it needs to run first
    state_setter: Optional[list[str]] = None
    seed: Optional[int] = None  # seed-dependent: a seed that reproduces the failure
    statistics: dict[str, Any] = dataclasses.field(default_factory=dict)
    order: dict[str, Any] = dataclasses.field(default_factory=dict)
    seeds: dict[str, Any] = dataclasses.field(default_factory=dict)
    # the in-process repetition evidence when the test leaks state into itself, else empty
    non_idempotent: dict[str, Any] = dataclasses.field(default_factory=dict)
    first_failure: Optional[Failure] = None
    environment: dict[str, Any] = dataclasses.field(default_factory=dict)
    command: list[str] = dataclasses.field(default_factory=list)
    started_at: str = ""
    finished_at: str = ""
    duration: float = 0.0
    version: str = ""
    notes: list[str] = dataclasses.field(default_factory=list)
    shards: list[str] = dataclasses.field(default_factory=list)
    # per knob: the increase in failure rate its runs exclude, the margin, and whether
    # every knob is within it (``met``): what allows a flaky or not-reproducible verdict
    power: dict[str, Any] = dataclasses.field(default_factory=dict)
    # per load knob: the slowdown of the test it reached at each level, and the target
    load: dict[str, Any] = dataclasses.field(default_factory=dict)
    # how the fresh processes were started (fork server or spawn), and why
    launcher: dict[str, Any] = dataclasses.field(default_factory=dict)
    # the lines to open (``where``): ``suspects`` (``model.suspects.Suspect``), ``note``,
    # ``runs`` and ``seconds``; empty when no run failed
    where: dict[str, Any] = dataclasses.field(default_factory=dict)
    # a race told apart (``interleaving``): ``kind`` interleaving, deadline or not shown,
    # with the limited pauses' counts and, for a deadline, the wait that expired
    timing: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def suspects(self) -> list[Suspect]:
        found = self.where.get("suspects")
        if not isinstance(found, list):
            return []
        return [Suspect.from_json(s) for s in found if isinstance(s, dict)]

    @property
    def bounded(self) -> bool:
        """Every knob's effect is bounded within the margin (``power``)."""
        return self.power.get("met") is True

    @property
    def replays_from_a_seed(self) -> bool:
        """Seed-dependent on the random or hash seed: it replays, a bug to fix (``draws``)."""
        return self.verdict == SEED_DEPENDENT and self.seeds.get("kind") in DRAW_KINDS

    @property
    def quarantine_allowed(self) -> bool:
        if self.verdict in NEEDS_BOUND:
            return self.bounded
        if self.replays_from_a_seed:
            return False
        return QUARANTINE_ALLOWED[self.verdict]

    @property
    def total_runs(self) -> int:
        return sum(arm.runs for arm in self.arms)

    @property
    def total_failures(self) -> int:
        return sum(arm.failures for arm in self.arms)

    def known_race_entry(self, link: Optional[str] = None) -> Optional[str]:
        """The known-race-patterns entry to add for a race (YAML), else None."""
        if self.verdict != RACE:
            return None
        from flakewarden.quarantine.known_races import race_entry

        return race_entry(self.test_id, self.knob, self.finished_at or self.started_at, link)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA_VERSION,
            "tool": {"name": "flakewarden", "version": self.version},
            "test_id": self.test_id,
            "verdict": self.verdict,
            "quarantine_allowed": self.quarantine_allowed,
            "reason": self.reason,
            "rule": self.rule,
            "knob": self.knob,
            "polluter": self.polluter,
            "state_setter": self.state_setter,
            "seed": self.seed,
            "runs": self.total_runs,
            "failures": self.total_failures,
            "arms": [arm.to_json() for arm in self.arms],
            "statistics": self.statistics,
            "order": self.order,
            "seeds": self.seeds,
            "non_idempotent": self.non_idempotent or None,
            "first_failure": None if self.first_failure is None else self.first_failure.to_json(),
            "known_race_entry": self.known_race_entry(),
            "environment": self.environment,
            "command": self.command,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "duration": round(self.duration, 3),
            "notes": self.notes,
            "shards": self.shards,
            "power": self.power,
            "load": self.load,
            "launcher": self.launcher,
            "where": self.where or None,
            "timing": self.timing or None,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Verdict:
        if data.get("schema") != SCHEMA_VERSION:
            raise ValueError(f"verdict.json schema {data.get('schema')!r} is not {SCHEMA_VERSION}")
        if data.get("verdict") not in VERDICTS:
            raise ValueError(f"unknown verdict {data.get('verdict')!r}")
        first = data.get("first_failure")
        seed = data.get("seed")
        return cls(
            test_id=str(data["test_id"]),
            verdict=str(data["verdict"]),
            reason=str(data.get("reason") or ""),
            rule=str(data.get("rule") or ""),
            arms=[Arm.from_json(a) for a in data.get("arms", [])],
            knob=data.get("knob"),
            polluter=data.get("polluter"),
            state_setter=None
            if data.get("state_setter") is None
            else [str(t) for t in data["state_setter"]],
            seed=None if seed is None else int(seed),
            statistics=dict(data.get("statistics") or {}),
            order=dict(data.get("order") or {}),
            seeds=dict(data.get("seeds") or {}),
            non_idempotent=dict(data.get("non_idempotent") or {}),
            first_failure=None if not first else Failure.from_json(first),
            environment=dict(data.get("environment") or {}),
            command=[str(c) for c in data.get("command", [])],
            started_at=str(data.get("started_at") or ""),
            finished_at=str(data.get("finished_at") or ""),
            duration=float(data.get("duration", 0.0)),
            version=str(data.get("tool", {}).get("version") or ""),
            notes=[str(n) for n in data.get("notes", [])],
            shards=[str(s) for s in data.get("shards", [])],
            power=dict(data.get("power") or {}),
            load=dict(data.get("load") or {}),
            launcher=dict(data.get("launcher") or {}),
            where=dict(data.get("where") or {}),
            timing=dict(data.get("timing") or {}),
        )


def read_verdict(directory: Path) -> Verdict:
    """A shard's ``verdict.json``, read confined to its directory and parsed totally
    (``outside_json``); ``ReportError`` naming the file for anything it cannot use."""
    is_dir = directory.is_dir()
    path = directory / "verdict.json" if is_dir else directory
    try:
        data = read_json(path, directory if is_dir else path.parent)
    except FileNotFoundError as exc:
        raise ReportError(f"no verdict.json in {directory}") from exc
    if not isinstance(data, dict):
        raise ReportError(f"cannot read {path}: not a JSON object")
    try:
        return Verdict.from_json(data)
    except (ValueError, KeyError, TypeError, AttributeError, OverflowError) as exc:
        raise ReportError(f"cannot read {path}: {exc}") from None
